// ChildMemory (see child_memory.h).
#include "runtime/child_memory.h"

#include "rankflow/error.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {

using detail::TensorAccess;

ChildMemory::ChildMemory(int chips, size_t bytes_per_chip, BufferIds& ids)
    : bytes_per_chip_(bytes_per_chip),
      ids_(ids),
      arenas_(chips, RangeAllocator(bytes_per_chip)),
      committed_(chips, 0) {}

namespace {
void check_worker(int worker, int chips, const char* operation) {
  if (worker < 0 || worker >= chips) {
    throw InvalidArgument(std::string(operation) + ": worker " + std::to_string(worker) +
                          " does not exist; chip workers are 0.." + std::to_string(chips - 1));
  }
}
}  // namespace

size_t ChildMemory::committed(int worker) const {
  check_worker(worker, static_cast<int>(arenas_.size()), "committed_child_memory");
  return committed_[worker];
}

Tensor ChildMemory::alloc(int worker, std::vector<size_t> shape, DType dtype, size_t bytes) {
  check_worker(worker, static_cast<int>(arenas_.size()), "alloc_child_tensor");
  const auto offset = arenas_[worker].allocate(bytes);
  if (!offset) {
    throw InvalidArgument("alloc_child_tensor: " + std::to_string(bytes) +
                          " bytes do not fit in chip worker " + std::to_string(worker) +
                          "'s child arena (" + std::to_string(bytes_per_chip_) +
                          " bytes; raise WorkerOptions::child_arena_bytes)");
  }
  Tensor t =
      TensorAccess::make(ids_.next(), *offset, bytes, std::move(shape), dtype, nullptr, worker);
  allocations_[TensorAccess::buffer(t)] = {worker, *offset, bytes, true};
  committed_[worker] += RangeAllocator::rounded(bytes);  // what the arena holds for it
  return t;
}

void ChildMemory::free(const Tensor& base) {
  auto it = allocations_.find(TensorAccess::buffer(base));
  if (base.home() < 0 || it == allocations_.end()) {
    throw InvalidArgument("free_child: not a child allocation");
  }
  Allocation& a = it->second;
  if (!a.live) throw InvalidArgument("free_child: this child allocation was already freed");
  const size_t offset = TensorAccess::offset(base);
  if (offset != a.offset || base.bytes() != a.bytes || !base.contiguous()) {
    throw InvalidArgument(
        "free_child: pass the tensor alloc_child_tensor returned, not a view "
        "(this one starts " +
        std::to_string(offset - a.offset) + " bytes into the allocation)");
  }
  a.live = false;
  pending_free_.push_back({run_, TensorAccess::buffer(base)});
}

void ChildMemory::check_use(const Tensor& t, int worker, const std::string& which) const {
  auto it = allocations_.find(TensorAccess::buffer(t));
  if (it == allocations_.end() || !it->second.live) {
    throw InvalidArgument(which + " is child memory that was freed (a stale handle)");
  }
  if (t.home() != worker) {
    throw InvalidArgument(
        which + " is child memory of chip worker " + std::to_string(t.home()) +
        ", but the task runs on " +
        (worker < 0 ? std::string("a host sub-worker") : "chip worker " + std::to_string(worker)));
  }
}

void ChildMemory::end_run(uint64_t run) {
  std::erase_if(pending_free_, [&](const PendingFree& f) {
    if (f.run > run) return false;  // a later run in flight may still use it
    const Allocation& a = allocations_.at(f.buffer);
    arenas_[a.worker].release(a.offset, a.bytes);
    committed_[a.worker] -= RangeAllocator::rounded(a.bytes);
    return true;
  });
}

}  // namespace rankflow::runtime
