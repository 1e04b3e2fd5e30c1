// HostMemory (see host_memory.h).
#include "runtime/host_memory.h"

#include <algorithm>
#include <cstring>

#include "rankflow/error.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {
namespace {

// The last copy of an alloc tensor (or of a view of it) reports its memory free.
class Lease {
 public:
  Lease(std::shared_ptr<LeaseQueue> queue, LeaseQueue::Released what)
      : queue_(std::move(queue)), what_(what) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    std::lock_guard lock(queue_->mutex);
    queue_->released.push_back(what_);
    queue_->pending.store(queue_->released.size(), std::memory_order_release);
    queue_->released_cv.notify_all();
  }

 private:
  std::shared_ptr<LeaseQueue> queue_;
  LeaseQueue::Released what_;
};

}  // namespace

HostMemory::HostMemory(std::byte* arena, size_t bytes, BufferIds& ids)
    : base_(arena), arena_(bytes), ids_(ids) {}

Tensor HostMemory::place(size_t offset, std::vector<size_t> shape, DType dtype, size_t bytes) {
  Tensor t = detail::TensorAccess::make(ids_.next(), offset, bytes, std::move(shape), dtype,
                                        base_ + offset, -1);
  live_.emplace(detail::TensorAccess::buffer(t), Range{offset, bytes, run_});
  return t;
}

Tensor HostMemory::host_tensor(std::vector<size_t> shape, DType dtype, size_t bytes) {
  const auto offset = arena_.allocate(bytes);
  if (!offset) {
    throw InvalidArgument("host_tensor: " + std::to_string(bytes) + " bytes do not fit in the " +
                          "host arena (" + std::to_string(arena_.used()) + " of " +
                          std::to_string(arena_.capacity()) +
                          " bytes in use; raise WorkerOptions::host_arena_bytes)");
  }
  Tensor t = place(*offset, std::move(shape), dtype, bytes);
  std::memset(base_ + *offset, 0, bytes);
  return t;
}

std::optional<Tensor> HostMemory::try_alloc(std::vector<size_t> shape, DType dtype, size_t bytes) {
  const auto offset = arena_.allocate(bytes);
  if (!offset) return std::nullopt;
  Tensor t = place(*offset, std::move(shape), dtype, bytes);
  detail::TensorAccess::set_lease(
      t, std::make_shared<Lease>(
             leases_, LeaseQueue::Released{run_, detail::TensorAccess::buffer(t), *offset, bytes}));
  return t;
}

bool HostMemory::has_released() {
  return leases_->pending.load(std::memory_order_acquire) > 0;
}

std::vector<LeaseQueue::Released> HostMemory::take_released() {
  std::vector<LeaseQueue::Released> released;
  if (!has_released()) return released;  // the usual case: no lock
  std::lock_guard lock(leases_->mutex);
  released.swap(leases_->released);
  leases_->pending.store(0, std::memory_order_release);
  return released;
}

bool HostMemory::use(uint64_t buffer) {
  if (auto it = live_.find(buffer); it != live_.end()) {
    return it->second.named_in_run == run_ && !it->second.scope_ended;
  }
  auto it = persistent_.find(buffer);
  if (it == persistent_.end()) return false;
  it->second.named_in_run = run_;
  return true;
}

Tensor HostMemory::create_persistent(size_t bytes) {
  const auto offset = arena_.allocate(bytes);
  if (!offset) {
    throw InvalidArgument("create_buffer: " + std::to_string(bytes) + " bytes do not fit in the " +
                          "host arena (" + std::to_string(arena_.used()) + " of " +
                          std::to_string(arena_.capacity()) +
                          " bytes in use; raise WorkerOptions::host_arena_bytes)");
  }
  Tensor t = detail::TensorAccess::make(ids_.next(), *offset, bytes, {bytes}, DType::kU8,
                                        base_ + *offset, -1);
  persistent_.emplace(detail::TensorAccess::buffer(t), Range{*offset, bytes});
  std::memset(base_ + *offset, 0, bytes);
  return t;
}

uint64_t HostMemory::last_run_naming(uint64_t buffer) const {
  auto it = persistent_.find(buffer);
  if (it == persistent_.end()) {
    throw InvalidArgument("release_buffer: not a live buffer of this worker (released already?)");
  }
  return it->second.named_in_run;
}

void HostMemory::release_persistent(uint64_t buffer) {
  const Range range = persistent_.at(buffer);
  arena_.release(range.offset, range.bytes);
  persistent_.erase(buffer);
}

bool HostMemory::end_scope(uint64_t buffer) {
  auto it = live_.find(buffer);
  if (it == live_.end()) return false;
  it->second.scope_ended = true;
  return true;
}

bool HostMemory::release_now(uint64_t buffer) {
  auto it = live_.find(buffer);
  if (it == live_.end()) return false;
  arena_.release(it->second.offset, it->second.bytes);
  live_.erase(it);
  return true;
}

// Leases of the run that come back later find nothing to free (reclaim skips them).
void HostMemory::end_run(uint64_t run) {
  const bool only_this_run = std::all_of(live_.begin(), live_.end(), [&](const auto& entry) {
    return entry.second.named_in_run == run;
  });
  if (only_this_run && persistent_.empty()) {  // the usual case: one run at a time
    live_.clear();
    arena_.reset();
    return;
  }
  std::erase_if(live_, [&](const auto& entry) {
    if (entry.second.named_in_run != run) return false;
    arena_.release(entry.second.offset, entry.second.bytes);
    return true;
  });
}

}  // namespace rankflow::runtime
