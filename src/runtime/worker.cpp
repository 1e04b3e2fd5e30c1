// Worker lifecycle on every rank, and the chip workers' service loop. Main thread of each rank
// (the host's scheduler and sub-worker threads live in scheduler.cpp).
#include <cstring>
#include <functional>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/crash_report.h"
#include "runtime/protocol.h"
#include "runtime/scheduler.h"
#include "runtime/worker_impl.h"
#include "transport/progress.h"
#include "transport/team_state.h"

namespace rankflow::runtime {

WorkerImpl::WorkerImpl(int& argc, char**& argv, WorkerOptions options)
    : context_(transport::Context::acquire(&argc, &argv)), options_(options) {
  rank_ = context_->world_rank();
  size_ = context_->world_size();
  if (size_ < 2) {
    throw InvalidArgument(
        "the DAG runtime needs a host and at least one chip worker: run it as "
        "mpirun -n 1+N (got 1 rank)");
  }
  if (options_.num_sub_workers < 0 || options_.host_arena_bytes == 0) {
    throw InvalidArgument("WorkerOptions: num_sub_workers must be >= 0 and host_arena_bytes > 0");
  }
}

WorkerImpl::~WorkerImpl() {
  try {
    close();
  } catch (const std::exception& e) {
    log::warn("closing the worker: ", e.what());
  }
}

void WorkerImpl::check_state(State expected, const char* operation) const {
  if (state_ == expected) return;
  const char* now = state_ == State::kRegistering ? "not initialised yet"
                    : state_ == State::kReady     ? "already initialised"
                                                  : "closed";
  throw InvalidState(std::string(operation) + ": the worker is " + now);
}

KernelHandle WorkerImpl::register_kernel(std::string name, TaskFn fn) {
  check_state(State::kRegistering, "register_kernel");
  if (name.empty() || !fn) throw InvalidArgument("register_kernel needs a name and a callable");
  kernels_.push_back({std::move(name), std::move(fn)});
  return {static_cast<uint32_t>(kernels_.size() - 1)};
}

SubHandle WorkerImpl::register_sub(std::string name, TaskFn fn) {
  check_state(State::kRegistering, "register_sub");
  if (name.empty() || !fn) throw InvalidArgument("register_sub needs a name and a callable");
  subs_.push_back({std::move(name), std::move(fn)});
  return {static_cast<uint32_t>(subs_.size() - 1)};
}

// Every rank must register the same kernels and subs, in the same order.
void WorkerImpl::check_registrations_match() {
  std::string signature;
  for (const auto& k : kernels_)
    signature += "k:" + k.name + ";";
  for (const auto& s : subs_)
    signature += "s:" + s.name + ";";
  const uint64_t mine = std::hash<std::string>{}(signature);
  std::vector<uint64_t> all(size_);
  MPI_Request request;
  transport::check_mpi(
      MPI_Iallgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &request),
      "MPI_Iallgather(registrations)");
  context_->mpi_wait(request, "init (registration check)");
  for (int r = 0; r < size_; ++r) {
    if (all[r] != all[0]) {
      throw InvalidArgument("init: rank " + std::to_string(r) +
                            " registered different kernels or subs than rank 0; register the "
                            "same names in the same order on every rank (this rank: " +
                            signature + ")");
    }
  }
}

void WorkerImpl::init() {
  check_state(State::kRegistering, "init");
  check_registrations_match();
  const size_t completions = static_cast<size_t>(chips()) * kRingSlots * kCompletionStride;
  // The arena is last, and only the host holds it.
  team_ = std::make_unique<Team>(transport::create_team(
      context_, MPI_COMM_WORLD,
      {{"ring", kRingSlots * kDescStride},
       {"completions", completions},
       {"child", options_.child_arena_bytes, 4096},  // each chip's child memory
       {"arena", options_.host_arena_bytes, 4096}},  // last: only the host holds it
      "runtime", kDoneSignalBase + static_cast<uint32_t>(chips()), /*last_buffer_here=*/is_host()));
  if (is_host()) {
    scheduler_ = std::make_unique<Scheduler>(*this);
  } else {
    install_crash_report(rank_, rank_ - 1);
  }
  state_ = State::kReady;
}

void WorkerImpl::run(const std::function<void(Orchestrator&)>& body) {
  check_state(State::kReady, "run");
  if (!is_host()) return serve_run();
  scheduler_->begin_run();
  std::exception_ptr body_error;
  try {
    Orchestrator orchestrator(*scheduler_);
    body(orchestrator);
  } catch (...) {
    body_error = std::current_exception();
  }
  try {
    scheduler_->end_run();
  } catch (...) {
    if (!body_error) throw;
  }
  if (body_error) std::rethrow_exception(body_error);
}

void WorkerImpl::close() {
  if (state_ == State::kClosed) return;
  if (state_ == State::kReady) {
    scheduler_.reset();
    team_->close();
    team_.reset();
  }
  state_ = State::kClosed;
}

namespace {

// Calls fn(byte offset from the first element, bytes) for each contiguous run of a strided
// argument's elements, so staged results go back without touching the gaps between them.
template <typename Fn>
void for_each_run(const ArgDesc& a, Fn fn) {
  if (a.bytes == 0) return;
  if (a.bytes == a.extent) return fn(size_t{0}, static_cast<size_t>(a.extent));
  const uint32_t inner = a.ndim - 1;
  const bool packed_rows = a.strides[inner] == 1;
  const uint32_t outer = packed_rows ? inner : a.ndim;  // dimensions walked one index at a time
  const size_t run = packed_rows ? a.shape[inner] * a.element_bytes : a.element_bytes;
  uint64_t index[kMaxDims] = {};
  for (;;) {
    size_t offset = 0;
    for (uint32_t d = 0; d < outer; ++d)
      offset += index[d] * a.strides[d] * a.element_bytes;
    fn(offset, run);
    uint32_t d = outer;
    while (d > 0 && ++index[d - 1] == a.shape[d - 1])
      index[--d] = 0;
    if (d == 0) return;
  }
}

// The arguments of one task as the kernel sees them: straight into the host's mapped arena, or
// staged through local copies fetched before and written back after the kernel.
class ChipArgs {
 public:
  ChipArgs(Team& team, const TaskDesc& desc, const ChipDomains& domains, int chip) : team_(team) {
    const size_t arena = team.offset("arena");
    staged_.resize(desc.nargs);
    for (uint32_t i = 0; i < desc.nargs; ++i) {
      const ArgDesc& a = desc.args[i];
      std::vector<size_t> shape(a.shape, a.shape + a.ndim);
      std::vector<size_t> strides(a.strides, a.strides + a.ndim);
      const auto access = static_cast<Access>(a.access);
      std::byte* data = nullptr;
      if (a.space == kDomainSpace) {
        args_.push_back(
            {nullptr, 0, {}, access, {}, &domains.find(static_cast<uint32_t>(a.offset), chip)});
        continue;
      }
      if (a.space == kChildSpace) {  // this chip's own child memory
        data = team.local_ptr(team.offset("child") + a.offset);
      } else {
        data = static_cast<std::byte*>(team.remote_ptr(0, arena + a.offset));
        if (data == nullptr && a.extent > 0) {
          staged_[i].resize(a.extent);
          data = staged_[i].data();
          if (access != Access::kOutput) team.get(0, arena + a.offset, data, a.extent);
        }
      }
      args_.push_back({data, a.bytes, std::move(shape), access, std::move(strides)});
    }
    team.flush();
  }

  // Writes staged outputs back to the host (they land before the completion signal): the
  // elements only, so other tasks' elements between a strided view's rows stay untouched.
  void write_back(const TaskDesc& desc) {
    const size_t arena = team_.offset("arena");
    for (uint32_t i = 0; i < desc.nargs; ++i) {
      const ArgDesc& a = desc.args[i];
      const auto access = static_cast<Access>(a.access);
      const bool written = access == Access::kOutput || access == Access::kInOut ||
                           access == Access::kOutputExisting;
      if (!written || a.space != kHostSpace || staged_[i].empty()) continue;
      for_each_run(a, [&](size_t offset, size_t bytes) {
        team_.put(0, arena + a.offset + offset, staged_[i].data() + offset, bytes);
      });
    }
    team_.flush();
  }

  std::vector<TaskContext::Arg> take() { return std::move(args_); }

 private:
  Team& team_;
  std::vector<std::vector<std::byte>> staged_;
  std::vector<TaskContext::Arg> args_;
};

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void fill_message(Completion& record, const std::string& message) {
  std::snprintf(record.message, kMessageBytes, "%s", message.c_str());
}

}  // namespace

// Waits for descriptor `sequence`. The deadline (RANKFLOW_TIMEOUT_S) restarts at every heartbeat
// of the host, so only a host that is gone or stuck times a chip out.
void WorkerImpl::wait_for_descriptor(uint64_t sequence) {
  Team& t = *team_;
  uint64_t beats = t.signal_value(kHeartbeatSignal);
  for (;;) {
    uint64_t now_beats = beats;
    t.wait_until(
        [&] {
          now_beats = t.signal_value(kHeartbeatSignal);
          return t.signal_value(kPostedSignal) >= sequence || now_beats != beats;
        },
        [&] {
          return "chip worker " + std::to_string(rank_ - 1) + " (rank " + std::to_string(rank_) +
                 ") heard nothing from the host for " + transport::format_seconds(t.timeout()) +
                 " while waiting for its next task: the host is gone or stuck";
        });
    if (t.signal_value(kPostedSignal) >= sequence) return;
    beats = now_beats;
  }
}

// One task on this chip: its arguments mapped or staged, the kernel, the staged results back.
void WorkerImpl::run_kernel(const TaskDesc& desc, bool copy) {
  const int chip = rank_ - 1;
  ChipArgs args(*team_, desc, domains_, chip);
  TaskContext context(chip, desc.task_id, args.take(), static_cast<int>(desc.group_rank),
                      static_cast<int>(desc.group_size),
                      CallConfig{static_cast<int>(desc.threads), desc.scratch_bytes});
  if (copy) {
    std::memcpy(context.output<std::byte>(0).data(), context.input<std::byte>(1).data(),
                desc.args[0].bytes);
  } else {
    kernels_[desc.kernel].fn(context);
  }
  args.write_back(desc);
}

void WorkerImpl::serve_run() {
  Team& t = *team_;
  const int chip = rank_ - 1;
  std::vector<Completion> records(kRingSlots);
  // Idle chips wait for the host's next task for as long as RANKFLOW_TIMEOUT_S allows between
  // two descriptors; the host's orchestration body must keep submitting or end the run.
  for (;;) {
    const uint64_t sequence = ++chip_sequence_;
    wait_for_descriptor(sequence);
    const uint64_t slot = (sequence - 1) % kRingSlots;
    TaskDesc desc;
    const std::byte* posted = t.local_ptr(t.offset("ring") + slot * kDescStride);
    std::memcpy(&desc, posted, offsetof(TaskDesc, args));  // the header, then the used arguments
    desc.nargs = std::min(desc.nargs, kMaxArgs);
    std::memcpy(static_cast<void*>(desc.args), posted + offsetof(TaskDesc, args),
                std::min(used_bytes(desc), sizeof(TaskDesc)) - offsetof(TaskDesc, args));
    Completion& record = records[slot];
    record = Completion{};
    record.task_id = desc.task_id;
    record.ok = 1;
    record.start_ns = now_ns();
    if (desc.kind == DescKind::kTask) {
      const bool copy = desc.kernel == kCopyKernel;
      const bool create_domain = desc.kernel == kCreateDomainKernel;
      static const std::string copy_name = "copy";
      static const std::string domain_name = "allocate_domain";
      const std::string& name = copy            ? copy_name
                                : create_domain ? domain_name
                                                : kernels_.at(desc.kernel).name;
      try {
        crash_report_task(desc.task_id, name.c_str());
        if (create_domain) {
          DomainDesc domain;
          std::memcpy(&domain, static_cast<const void*>(desc.args), sizeof(DomainDesc));
          domains_.create(context_, domain);
        } else {
          run_kernel(desc, copy);
        }
      } catch (const std::exception& e) {
        record.ok = 0;
        fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                                 std::to_string(chip) + ", kernel '" + name + "': " + e.what());
      } catch (...) {
        record.ok = 0;
        fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                                 std::to_string(chip) + ", kernel '" + name +
                                 "': unknown exception");
      }
    }
    crash_report_task(0, nullptr);
    record.end_ns = now_ns();
    t.put(0, t.offset("completions") + (chip * kRingSlots + slot) * kCompletionStride, &record,
          used_bytes(record));
    t.signal(0, kDoneSignalBase + static_cast<uint32_t>(chip));
    if (desc.kind == DescKind::kEndRun) {
      t.flush();
      domains_.close_all();  // collective per domain, in the same order on every member
      return;
    }
  }
}

}  // namespace rankflow::runtime

namespace rankflow {

std::byte* TaskContext::scratch(size_t bytes) {
  if (scratch_.size() < config_.scratch_bytes) scratch_.resize(config_.scratch_bytes);
  const size_t start = (scratch_used_ + 63) / 64 * 64;
  if (start + bytes > scratch_.size()) {
    throw InvalidArgument("task " + std::to_string(task_id_) + ": scratch arena of " +
                          std::to_string(scratch_.size()) + " bytes cannot give " +
                          std::to_string(bytes) + " more (" + std::to_string(start) +
                          " in use); raise CallConfig::scratch_bytes");
  }
  scratch_used_ = start + bytes;
  return scratch_.data() + start;
}

const TaskContext::Arg& TaskContext::arg(size_t i) const {
  if (i >= args_.size()) {
    throw InvalidArgument("task argument " + std::to_string(i) + " does not exist; the task has " +
                          std::to_string(args_.size()));
  }
  return args_[i];
}

DomainContext& TaskContext::domain(size_t i) const {
  const Arg& a = arg(i);
  if (a.domain == nullptr) {
    throw InvalidArgument("task argument " + std::to_string(i) +
                          " is not a domain (pass one with rankflow::domain_arg)");
  }
  return *a.domain;
}

const TaskContext::Arg& TaskContext::contiguous_arg(size_t i) const {
  const Arg& a = arg(i);
  if (!is_contiguous(a.shape, a.strides)) {
    throw InvalidArgument("task argument " + std::to_string(i) +
                          " is a strided view; read it with TaskContext::view<T>(" +
                          std::to_string(i) + ")");
  }
  return a;
}

uint64_t TaskHandle::id() const {
  return state_ ? state_->id : 0;
}

std::vector<uint64_t> TaskHandle::depends_on() const {
  return state_ ? state_->deps : std::vector<uint64_t>{};
}

bool TaskHandle::done() const {
  if (!state_) return false;
  const auto s = state_->status.load();
  return s == runtime::TaskStatus::kSucceeded || s == runtime::TaskStatus::kFailed ||
         s == runtime::TaskStatus::kSkipped;
}

void TaskHandle::wait(std::chrono::nanoseconds timeout) const {
  if (!state_) throw InvalidState("TaskHandle::wait on an empty handle");
  transport::wait_until([&] { return done(); }, [] {}, timeout,
                        [&] {
                          return "task " + std::to_string(state_->id) + " ('" + state_->name +
                                 "') did not finish within " + transport::format_seconds(timeout);
                        });
  if (state_->status != runtime::TaskStatus::kSucceeded) throw RemoteFailure(state_->error);
}

Tensor Orchestrator::host_tensor(std::vector<size_t> shape, DType dtype) {
  return scheduler_.host_tensor(std::move(shape), dtype);
}

Domain Orchestrator::allocate_domain(std::string name, std::vector<int> workers,
                                     size_t window_bytes, std::vector<BufferSpec> buffers) {
  return Domain(scheduler_.allocate_domain(std::move(name), std::move(workers), window_bytes,
                                           std::move(buffers)));
}

Tensor Orchestrator::alloc(std::vector<size_t> shape, DType dtype) {
  return scheduler_.alloc(std::move(shape), dtype);
}

TaskHandle Orchestrator::submit(KernelHandle kernel, std::vector<TensorArg> args, int worker,
                                std::vector<uint64_t> after, CallConfig config) {
  std::vector<std::vector<TensorArg>> members;
  members.push_back(std::move(args));
  return TaskHandle(
      scheduler_.submit(false, kernel.index, std::move(members), {worker}, after, config));
}

TaskHandle Orchestrator::submit_group(KernelHandle kernel,
                                      std::vector<std::vector<TensorArg>> args_per_member,
                                      std::vector<int> workers, std::vector<uint64_t> after,
                                      CallConfig config) {
  return TaskHandle(scheduler_.submit(false, kernel.index, std::move(args_per_member),
                                      std::move(workers), after, config));
}

TaskHandle Orchestrator::submit_sub(SubHandle sub, std::vector<TensorArg> args,
                                    std::vector<uint64_t> after) {
  std::vector<std::vector<TensorArg>> members;
  members.push_back(std::move(args));
  return TaskHandle(scheduler_.submit(true, sub.index, std::move(members), {}, after, {}));
}

int Orchestrator::chips() const {
  return scheduler_.chips();
}

void Orchestrator::dump_dot(const std::string& path) const {
  scheduler_.dump_dot(path);
}

Tensor Orchestrator::alloc_child_tensor(int worker, std::vector<size_t> shape, DType dtype) {
  return scheduler_.alloc_child(worker, std::move(shape), dtype);
}

TaskHandle Orchestrator::copy_to(const Tensor& child_dst, const Tensor& host_src) {
  if (child_dst.home() < 0) throw InvalidArgument("copy_to: the destination is not child memory");
  return TaskHandle(scheduler_.copy(child_dst, host_src, "copy_to"));
}

TaskHandle Orchestrator::copy_from(const Tensor& host_dst, const Tensor& child_src) {
  if (child_src.home() < 0) throw InvalidArgument("copy_from: the source is not child memory");
  return TaskHandle(scheduler_.copy(host_dst, child_src, "copy_from"));
}

void Orchestrator::free_child(const Tensor& base) {
  scheduler_.free_child(base);
}

Worker::Worker(int& argc, char**& argv, WorkerOptions options)
    : impl_(std::make_unique<runtime::WorkerImpl>(argc, argv, options)) {}
Worker::~Worker() = default;
KernelHandle Worker::register_kernel(std::string name, TaskFn fn) {
  return impl_->register_kernel(std::move(name), std::move(fn));
}
SubHandle Worker::register_sub(std::string name, TaskFn fn) {
  return impl_->register_sub(std::move(name), std::move(fn));
}
void Worker::init() {
  impl_->init();
}
void Worker::run(const std::function<void(Orchestrator&)>& body) {
  impl_->run(body);
}
void Worker::close() {
  impl_->close();
}
bool Worker::is_host() const {
  return impl_->is_host();
}
int Worker::rank() const {
  return impl_->rank();
}
int Worker::chips() const {
  return impl_->chips();
}

}  // namespace rankflow
