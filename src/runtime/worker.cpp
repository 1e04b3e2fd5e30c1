// Worker lifecycle on every rank (registration, init, run, close) and the public Worker's
// forwarding. Main thread of each rank; the host's scheduler lives in scheduler.cpp, the
// chips' service loop in chip_service.cpp.
#include <chrono>
#include <functional>
#include <thread>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/crash_report.h"
#include "runtime/host_buffer.h"
#include "runtime/protocol.h"
#include "runtime/range_allocator.h"
#include "runtime/run_pipeline.h"
#include "runtime/sub_worker_pool.h"
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
  if (options_.admission_depth < 1) {
    throw InvalidArgument("WorkerOptions::admission_depth is " +
                          std::to_string(options_.admission_depth) +
                          "; at least 1 run must be admitted");
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
  // The ranks reach init as fast as each loads and maps its memory (the host zeroes its arena):
  // its MPI waits are start-up waits (RANKFLOW_STARTUP_TIMEOUT_S).
  transport::Context::StartUp startup(*context_);
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
    pipeline_ = std::make_shared<runtime::RunPipeline>(*scheduler_, options_.admission_depth);
    scheduler_->set_catch_up([pipeline = pipeline_.get()](const std::function<bool()>& executing) {
      pipeline->catch_up(executing);
    });
  } else {
    chip_ = std::make_unique<ChipService>(*team_, kernels_, context_, rank_);
    runtime::install_crash_report(rank_, rank_ - 1);
  }
  state_ = State::kReady;
}

std::shared_ptr<RunRecord> WorkerImpl::start_run(const std::function<void(Orchestrator&)>& body,
                                                 const char* operation) {
  check_state(State::kReady, operation);
  if (in_run_ || runtime::SubWorkerPool::on_sub_worker()) {
    throw InvalidState(std::string(operation) +
                       ": called inside a run (from its own body or a task)");
  }
  run_thread_ = std::this_thread::get_id();
  in_run_ = true;
  struct RunEnds {
    std::atomic<bool>& in_run;
    ~RunEnds() { in_run = false; }
  } run_ends{in_run_};
  if (!is_host()) {
    chip_->serve_run();
    auto record = std::make_shared<RunRecord>();
    record->ended = true;
    return record;
  }
  return pipeline_->submit(body);
}

void WorkerImpl::run(const std::function<void(Orchestrator&)>& body) {
  auto record = start_run(body, "run");
  if (is_host()) pipeline_->wait(*record, std::nullopt);
}

RunHandle WorkerImpl::submit(const std::function<void(Orchestrator&)>& body) {
  return RunHandle(start_run(body, "submit"));
}

void WorkerImpl::check_not_from_task(const char* operation) const {
  if (runtime::SubWorkerPool::on_sub_worker() ||
      (in_run_ && std::this_thread::get_id() != run_thread_)) {
    throw InvalidState(std::string(operation) +
                       ": called from a task; call it from the orchestration body or between "
                       "runs");
  }
}

void WorkerImpl::drain_runs() {
  if (state_ == State::kReady && is_host() && !in_run_) pipeline_->drain();
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
  scheduler_->release_buffer(buffer);  // InvalidState while a run in flight names it
}

void WorkerImpl::close() {
  if (state_ == State::kClosed) return;
  if (state_ == State::kReady && is_host()) end_runs_at_close();
  if (state_ == State::kReady) {
    if (is_host()) scheduler_->announce_close();
    if (!is_host()) chip_->wait_for_close();
    pipeline_.reset();
    scheduler_.reset();
    chip_.reset();
    team_->close();
    team_.reset();
  }
  state_ = State::kClosed;
}

// close() ends the runs in flight. A run that timed out gets one more timeout to finish, so
// the chips leave it and close with the host. If it still does not, a chip is inside a kernel
// that never returns, or dead, and no collective close can complete: the job ends here, with
// the reason, rather than hang in MPI_Finalize.
void WorkerImpl::end_runs_at_close() {
  try {
    pipeline_->drain();
  } catch (const Error& e) {
    log::error("close: ", e.what(), "; ending the job (MPI_Abort)");
    tell_chips_the_job_ends();
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Where the launcher outlives a rank (`mpirun --enable-recovery`) MPI_Abort ends only this
// process. The chips waiting for their run's next task then see the host close while the run is
// still open and end themselves (ChipService::wait_for_descriptor), rather than time out
// (RANKFLOW_TIMEOUT_S) and wait again in a collective close that cannot complete. Best effort:
// a chip inside a kernel does not look, a dead chip's transfer fails, and delivery (a flush,
// over UCX without mapping) is given half a second.
void WorkerImpl::tell_chips_the_job_ends() {
  using Clock = std::chrono::steady_clock;
  scheduler_->exclusively([&] {
    for (int c = 0; c < chips(); ++c) {
      try {
        team_->signal(c + 1, runtime::kClosingSignal);
      } catch (const Error&) {  // its endpoint failed: the dead chip
      }
    }
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < until) {
      try {
        if (team_->try_flush()) return;
      } catch (const Error&) {  // a dead chip's flush; the others' go on
      }
      std::this_thread::yield();
    }
  });
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
RunHandle Worker::submit(const std::function<void(Orchestrator&)>& body) {
  return impl_->submit(body);
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
