// The scheduler's memory: host tensors and Orchestrator::alloc intermediates in the host's
// arena, child memory in each chip's window, and the checks that every task argument names live
// memory it may use. Runs on the host's main thread (the orchestration body) under the
// scheduler's lock; leases of alloc tensors may be released from any thread.
#include <cstring>

#include <algorithm>
#include "rankflow/error.h"
#include "runtime/scheduler.h"
#include "runtime/worker_impl.h"
#include "transport/progress.h"
#include "transport/team_layout.h"

namespace rankflow::runtime {
namespace {

bool reads(Access a) {
  return a == Access::kInput || a == Access::kInOut;
}
bool writes(Access a) {
  return a == Access::kOutput || a == Access::kInOut || a == Access::kOutputExisting;
}

size_t checked_bytes(const std::vector<size_t>& shape, DType dtype, const char* what) {
  if (shape.empty() || shape.size() > kMaxDims) {
    throw InvalidArgument(std::string(what) + ": shape needs 1 to " + std::to_string(kMaxDims) +
                          " dimensions, got " + std::to_string(shape.size()));
  }
  size_t elements = 1;
  for (size_t d : shape)
    elements *= d;
  return elements * dtype_size(dtype);
}

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
    queue_->released_cv.notify_all();
  }

 private:
  std::shared_ptr<LeaseQueue> queue_;
  LeaseQueue::Released what_;
};

}  // namespace

Tensor Scheduler::place_host_tensor(size_t offset, std::vector<size_t> shape, DType dtype,
                                    size_t bytes) {
  Tensor t;
  t.buffer_ = next_buffer_++;
  t.offset_ = offset;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.data_ = arena_ + offset;
  t.alloc_begin_ = offset;
  t.alloc_end_ = offset + bytes;
  host_live_.insert(t.buffer_);
  return t;
}

Tensor Scheduler::host_tensor(std::vector<size_t> shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "host_tensor");
  std::lock_guard lock(mutex_);
  reclaim_released();
  const auto offset = host_arena_.allocate(bytes);
  if (!offset) {
    throw InvalidArgument("host_tensor: " + std::to_string(bytes) + " bytes do not fit in the " +
                          "host arena (" + std::to_string(host_arena_.used()) + " of " +
                          std::to_string(host_arena_.capacity()) +
                          " bytes in use; raise WorkerOptions::host_arena_bytes)");
  }
  Tensor t = place_host_tensor(*offset, std::move(shape), dtype, bytes);
  std::memset(t.data_, 0, bytes);
  return t;
}

// Waits, without the lock, for leases to come back while the arena is full.
Tensor Scheduler::alloc(std::vector<size_t> shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "alloc");
  if (RangeAllocator::rounded(bytes) > host_arena_.capacity()) {
    throw InvalidArgument("alloc: " + std::to_string(bytes) + " bytes exceed the host arena (" +
                          std::to_string(host_arena_.capacity()) +
                          " bytes; raise WorkerOptions::host_arena_bytes)");
  }
  const auto limit = worker_.options().alloc_timeout;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      reclaim_released();
      if (const auto offset = host_arena_.allocate(bytes)) {
        Tensor t = place_host_tensor(*offset, std::move(shape), dtype, bytes);
        t.lease_ = std::make_shared<Lease>(
            leases_, LeaseQueue::Released{run_number_, t.buffer_, *offset, bytes});
        return t;
      }
      if (!first_error_.empty()) throw RemoteFailure("this run already failed: " + first_error_);
    }
    std::unique_lock queue(leases_->mutex);
    if (!leases_->released_cv.wait_until(queue, deadline,
                                         [&] { return !leases_->released.empty(); })) {
      std::lock_guard lock(mutex_);
      throw Timeout("alloc: rank 0 (host) waited " + transport::format_seconds(limit) + " for " +
                    std::to_string(bytes) + " bytes of the host arena (" +
                    std::to_string(host_arena_.used()) + " of " +
                    std::to_string(host_arena_.capacity()) +
                    " bytes in use); drop the Tensors of intermediates you no longer need, or "
                    "raise WorkerOptions::host_arena_bytes");
    }
  }
}

// Returns the memory of alloc tensors nothing names any more (mutex_ held). Tasks hold copies of
// their arguments until they finish, so a released lease is no task's argument either.
void Scheduler::reclaim_released() {
  std::vector<LeaseQueue::Released> released;
  {
    std::lock_guard queue(leases_->mutex);
    released.swap(leases_->released);
  }
  for (const auto& r : released) {
    if (r.run != run_number_ || !host_live_.erase(r.buffer)) continue;  // reset with its run
    host_arena_.release(r.offset, r.bytes);
    tracker_.forget(r.buffer);
  }
}

// After the run: every host tensor goes, and child memory freed during the run can be reused
// (mutex_ held).
void Scheduler::release_run_memory() {
  for (const auto& domain : run_domains_)  // the chips free them at the end of the run
    domain->released = true;
  run_domains_.clear();
  host_arena_.reset();
  host_live_.clear();
  {
    std::lock_guard queue(leases_->mutex);
    leases_->released.clear();
  }
  for (uint64_t buffer : child_pending_free_) {
    auto it = child_allocations_.find(buffer);
    child_arenas_[it->second.worker].release(it->second.offset, it->second.bytes);
  }
  child_pending_free_.clear();
}

// Validates every argument (host tensors of this run; live child memory of the task's own
// worker, inside its allocation) and returns the byte ranges it touches (mutex_ held).
std::vector<ByteUse> Scheduler::uses_of(const std::vector<TensorArg>& args, const std::string& name,
                                        int worker) const {
  std::vector<ByteUse> uses;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i].tensor;
    if (args[i].domain) continue;  // check_domain_args
    const std::string which = "task '" + name + "': argument " + std::to_string(i);
    if (t.home_ >= 0) {
      auto it = child_allocations_.find(t.buffer_);
      if (it == child_allocations_.end() || !it->second.live) {
        throw InvalidArgument(which + " is child memory that was freed (a stale handle)");
      }
      if (t.home_ != worker) {
        throw InvalidArgument(which + " is child memory of chip worker " + std::to_string(t.home_) +
                              ", but the task runs on " +
                              (worker < 0 ? std::string("a host sub-worker")
                                          : "chip worker " + std::to_string(worker)));
      }
    } else if (t.data_ == nullptr || !host_live_.contains(t.buffer_)) {
      throw InvalidArgument(which +
                            " is not a tensor of this run (create it with host_tensor or alloc)");
    }
    if (args[i].access == Access::kNoDep) continue;
    const size_t begin = t.offset_ - t.alloc_begin_;  // from the allocation's start
    ByteUse use{
        t.buffer_, begin, begin + t.extent_bytes(), reads(args[i].access), writes(args[i].access),
        {}};
    if (!t.contiguous()) {  // the per-dimension box, for the exact overlap test
      use.layout.ndim = static_cast<uint32_t>(t.shape_.size());
      use.layout.element_bytes = dtype_size(t.dtype_);
      for (size_t d = 0; d < t.shape_.size(); ++d) {
        use.layout.shape[d] = t.shape_[d];
        use.layout.stride[d] = t.strides_[d] * dtype_size(t.dtype_);
      }
    }
    uses.push_back(use);
  }
  check_task_uses(uses, name.c_str());
  return uses;
}

Tensor Scheduler::alloc_child(int worker, std::vector<size_t> shape, DType dtype) {
  if (worker < 0 || worker >= chips_) {
    throw InvalidArgument("alloc_child_tensor: worker " + std::to_string(worker) +
                          " does not exist; chip workers are 0.." + std::to_string(chips_ - 1));
  }
  const size_t bytes = checked_bytes(shape, dtype, "alloc_child_tensor");
  std::lock_guard lock(mutex_);
  const auto offset = child_arenas_[worker].allocate(bytes);
  if (!offset) {
    throw InvalidArgument("alloc_child_tensor: " + std::to_string(bytes) +
                          " bytes do not fit in chip worker " + std::to_string(worker) +
                          "'s child arena (" + std::to_string(worker_.options().child_arena_bytes) +
                          " bytes; raise WorkerOptions::child_arena_bytes)");
  }
  Tensor t;
  t.buffer_ = next_buffer_++;
  t.offset_ = *offset;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.home_ = worker;
  t.alloc_begin_ = *offset;
  t.alloc_end_ = *offset + bytes;
  child_allocations_[t.buffer_] = {worker, *offset, bytes, true};
  return t;
}

void Scheduler::free_child(const Tensor& base) {
  std::lock_guard lock(mutex_);
  auto it = child_allocations_.find(base.buffer_);
  if (base.home_ < 0 || it == child_allocations_.end()) {
    throw InvalidArgument("free_child: not a child allocation");
  }
  ChildAllocation& a = it->second;
  if (!a.live) throw InvalidArgument("free_child: this child allocation was already freed");
  if (base.offset_ != a.offset || base.bytes() != a.bytes || !base.contiguous()) {
    throw InvalidArgument(
        "free_child: pass the tensor alloc_child_tensor returned, not a view "
        "(this one starts " +
        std::to_string(base.offset_ - a.offset) + " bytes into the allocation)");
  }
  a.live = false;
  child_pending_free_.push_back(base.buffer_);
}

std::shared_ptr<TaskState> Scheduler::copy(const Tensor& dst, const Tensor& src, const char* what) {
  const Tensor& child = dst.home_ >= 0 ? dst : src;
  const Tensor& host = dst.home_ >= 0 ? src : dst;
  if (child.home_ < 0 || host.home_ >= 0) {
    throw InvalidArgument(std::string(what) + ": needs one child tensor and one host tensor");
  }
  if (!dst.contiguous() || !src.contiguous()) {
    throw InvalidArgument(std::string(what) + ": both views must be contiguous");
  }
  if (dst.bytes() != src.bytes()) {
    throw InvalidArgument(std::string(what) + ": sizes differ (" + std::to_string(dst.bytes()) +
                          " and " + std::to_string(src.bytes()) + " bytes)");
  }
  std::vector<std::vector<TensorArg>> args{{out_existing(dst), in(src)}};
  return submit(false, kCopyKernel, std::move(args), {child.home_}, {}, {});
}

}  // namespace rankflow::runtime

namespace rankflow::runtime {

std::shared_ptr<DomainState> Scheduler::allocate_domain(std::string name, std::vector<int> workers,
                                                        size_t window_bytes,
                                                        std::vector<BufferSpec> buffers) {
  auto setup =
      std::make_shared<DomainDesc>(describe_domain(name, workers, window_bytes, buffers, chips_));
  auto domain = std::make_shared<DomainState>();
  {
    std::lock_guard lock(mutex_);
    if (submitted_this_run_) {
      throw InvalidState("allocate_domain('" + name +
                         "'): domains come before the run's first submit (chips build them "
                         "ahead of every task)");
    }
    for (const auto& live : run_domains_) {
      if (!live->released && live->name == name) {
        throw InvalidArgument("allocate_domain('" + name + "'): a domain of that name is live");
      }
    }
    setup->id = next_domain_++;
    domain->id = setup->id;
    domain->run = run_number_;
  }
  domain->name = std::move(name);
  domain->window_bytes = window_bytes;
  domain->buffers = buffers;
  transport::TeamLayout layout(domain_team_buffers(buffers, window_bytes),
                               Team::kDefaultSignalSlots);
  for (const BufferSpec& b : buffers)
    domain->buffer_offsets.push_back(layout.find(b.name).offset);
  domain->workers = workers;
  std::vector<std::vector<TensorArg>> no_args(workers.size());
  domain->creation_task =
      submit(false, kCreateDomainKernel, std::move(no_args), std::move(workers), {}, {}, setup)->id;
  std::lock_guard lock(mutex_);
  run_domains_.push_back(domain);
  return domain;
}

// Domain arguments (mutex_ held): a live domain of this run, on a chip task of a member. The
// task waits for the domain's creation.
void Scheduler::check_domain_args(const std::vector<TensorArg>& args, const std::string& name,
                                  int worker, std::vector<uint64_t>& after) const {
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& domain = args[i].domain;
    if (!domain) continue;
    const std::string which =
        "task '" + name + "': argument " + std::to_string(i) + " (domain '" + domain->name + "')";
    if (domain->released || domain->run != run_number_) {
      throw InvalidState(which + " was released; a domain lives for the run that allocated it");
    }
    if (worker < 0) throw InvalidArgument(which + ": the host is not a member; use a chip task");
    if (std::find(domain->workers.begin(), domain->workers.end(), worker) ==
        domain->workers.end()) {
      throw InvalidArgument(which + ": chip worker " + std::to_string(worker) + " is not a member");
    }
    after.push_back(domain->creation_task);
  }
}

}  // namespace rankflow::runtime
