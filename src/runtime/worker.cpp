// Worker lifecycle on every rank (registration, init, run, close) and the public Worker's
// forwarding. Main thread of each rank; the host's scheduler lives in scheduler.cpp, the
// chips' service loop in chip_service.cpp.
#include <functional>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/crash_report.h"
#include "runtime/host_buffer.h"
#include "runtime/protocol.h"
#include "runtime/range_allocator.h"
#include "runtime/worker_impl.h"
#include "transport/team_state.h"

namespace rankflow::detail {

using runtime::ChipService;
using runtime::HostServices;
using runtime::kCompletionStride;
using runtime::kCounterStride;
using runtime::kDescStride;
using runtime::kRingSlots;
using runtime::kRuntimeSignalSlots;
using runtime::Scheduler;

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

void WorkerImpl::init() {
  check_state(State::kRegistering, "init");
  check_registrations_match();
  const size_t completions = static_cast<size_t>(chips()) * kRingSlots * kCompletionStride;
  team_ = std::make_unique<Team>(transport::create_team(
      context_, MPI_COMM_WORLD,
      {{"ring", kRingSlots * kDescStride, 64},
       {"completions", completions, 64},
       {"counters", (static_cast<size_t>(chips()) + 1) * kCounterStride, kCounterStride},
       {"child", options_.child_arena_bytes, 4096},  // each chip's child memory
       {"arena", options_.host_arena_bytes, 4096}},  // last: only the host holds it
      "runtime", kRuntimeSignalSlots, /*last_buffer_here=*/is_host()));
  if (is_host()) {
    std::vector<bool> shares_core(chips());
    for (int c = 0; c < chips(); ++c)
      shares_core[c] = context_->shares_core_with(c + 1);
    scheduler_ = std::make_unique<Scheduler>(
        HostServices{*team_, options_, kernels_, context_->timeout(), std::move(shares_core)});
  } else {
    chip_ = std::make_unique<ChipService>(*team_, kernels_, context_, rank_);
    runtime::install_crash_report(rank_, rank_ - 1);
  }
  state_ = State::kReady;
}

void WorkerImpl::run(const std::function<void(Orchestrator&)>& body) {
  check_state(State::kReady, "run");
  if (in_run_) throw InvalidState("run: called inside a run (from its own body or a task)");
  run_thread_ = std::this_thread::get_id();
  in_run_ = true;
  struct RunEnds {
    std::atomic<bool>& in_run;
    ~RunEnds() { in_run = false; }
  } run_ends{in_run_};
  if (!is_host()) return chip_->serve_run();
  scheduler_->begin_run();
  std::exception_ptr body_error;
  try {
    Orchestrator orchestrator = scheduler_->orchestrator();
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

void WorkerImpl::check_not_from_task(const char* operation) const {
  if (in_run_ && std::this_thread::get_id() != run_thread_) {
    throw InvalidState(std::string(operation) +
                       ": called from a task; call it from the orchestration body or between "
                       "runs");
  }
}

void WorkerImpl::drain_timed_out_run(const char*) {
  if (state_ == State::kReady && is_host() && !in_run_ && scheduler_->run_timed_out()) {
    scheduler_->drain_timed_out_run();  // the chips leave that run first (or Timeout)
  }
}

const runtime::Scheduler& WorkerImpl::host_scheduler(const char* operation) const {
  check_state(State::kReady, operation);
  check_not_from_task(operation);
  if (!is_host()) {
    throw InvalidState(std::string(operation) + ": the host keeps this record; call it on rank 0");
  }
  return *scheduler_;
}

// The checks that need no arena run on every rank, so a chip's handle fails as the host's does.
HostBuffer WorkerImpl::create_buffer(size_t bytes) {
  check_state(State::kReady, "create_buffer");
  check_not_from_task("create_buffer");
  const size_t capacity = options_.host_arena_bytes;
  if (bytes == 0) throw InvalidArgument("create_buffer: a buffer of 0 bytes");
  if (bytes > capacity || runtime::RangeAllocator::rounded(bytes) > capacity) {
    throw InvalidArgument("create_buffer: " + std::to_string(bytes) +
                          " bytes are more than the host arena holds (" + std::to_string(capacity) +
                          " bytes; raise WorkerOptions::host_arena_bytes)");
  }
  if (is_host()) return scheduler_->create_buffer(bytes);
  auto state = std::make_shared<HostBufferState>();  // names nothing here
  state->bytes = bytes;
  return HostBufferState::handle(std::move(state));
}

void WorkerImpl::release_buffer(HostBuffer& buffer) {
  check_state(State::kReady, "release_buffer");
  check_not_from_task("release_buffer");
  const auto& state = HostBufferState::of(buffer);
  if (!state) throw InvalidArgument("release_buffer: an empty handle");
  if (state->released) throw InvalidArgument("release_buffer: the buffer was released already");
  if (!is_host()) {
    state->released = true;
    return;
  }
  drain_timed_out_run("release_buffer");  // then no run in flight can still name it
  scheduler_->release_buffer(buffer);
}

void WorkerImpl::close() {
  if (state_ == State::kClosed) return;
  if (state_ == State::kReady && is_host() && scheduler_->run_timed_out()) end_timed_out_run();
  if (state_ == State::kReady) {
    if (is_host()) scheduler_->announce_close();
    if (!is_host()) chip_->wait_for_close();
    scheduler_.reset();
    chip_.reset();
    team_->close();
    team_.reset();
  }
  state_ = State::kClosed;
}

// close() after a run that timed out: its late tasks get one more timeout to finish, so the
// chips leave the run and close with the host. If they still do not, the chips are inside a
// kernel that never returns and no collective close can complete: the job ends here, with the
// reason, rather than hang in MPI_Finalize.
void WorkerImpl::end_timed_out_run() {
  try {
    scheduler_->drain_timed_out_run();
  } catch (const Error& e) {
    log::error("close: ", e.what(), "; ending the job (MPI_Abort)");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace rankflow::detail

namespace rankflow {

Worker::Worker(int& argc, char**& argv, WorkerOptions options)
    : impl_(std::make_unique<detail::WorkerImpl>(argc, argv, options)) {}
Worker::~Worker() = default;
KernelHandle Worker::register_kernel(std::string name, TaskFn fn) {
  return impl_->register_kernel(std::move(name), std::move(fn));
}
SubHandle Worker::register_sub(std::string name, TaskFn fn) {
  return impl_->register_sub(std::move(name), std::move(fn));
}
void Worker::unregister(KernelHandle kernel) {
  impl_->unregister(false, kernel.index, "unregister(kernel)");
}
void Worker::unregister(SubHandle sub) {
  impl_->unregister(true, sub.index, "unregister(sub)");
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
HostBuffer Worker::create_buffer(size_t bytes) {
  return impl_->create_buffer(bytes);
}
void Worker::release_buffer(HostBuffer& buffer) {
  impl_->release_buffer(buffer);
}
size_t Worker::committed_child_memory(int worker) const {
  return impl_->host_scheduler("committed_child_memory").committed_child_memory(worker);
}
std::map<std::string, Domain> Worker::live_domains() const {
  return impl_->host_scheduler("live_domains").live_domains();
}

}  // namespace rankflow
