// Worker lifecycle on every rank (registration, init, run, close) and the public Worker's
// forwarding. Main thread of each rank; the host's scheduler lives in scheduler.cpp, the
// chips' service loop in chip_service.cpp.
#include <functional>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/crash_report.h"
#include "runtime/host_buffer.h"
#include "runtime/protocol.h"
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

// Registration is open before init(), and after it between runs. A run in progress (or a
// timed-out run still open on the chips) would keep the chips from the collective agreement.
void WorkerImpl::check_can_register(const char* operation) {
  if (state_ == State::kClosed) check_state(State::kReady, operation);  // "the worker is closed"
  if (in_run_) {
    throw InvalidState(std::string(operation) +
                       ": called inside a run; register and unregister between runs, on every "
                       "rank in the same order");
  }
  if (state_ == State::kReady && is_host() && scheduler_->run_timed_out()) {
    scheduler_->drain_timed_out_run();  // the chips leave that run first (or Timeout)
  }
}

// Applies `change` to the kernel table; after init every rank then agrees on the result before
// any returns, and a change that failed or differs anywhere is undone everywhere.
template <typename Change, typename Undo>
auto WorkerImpl::change_registrations(const std::string& operation, Change change, Undo undo) {
  if (state_ != State::kReady) return change();
  std::exception_ptr local_error;
  decltype(change()) result{};
  try {
    result = change();
  } catch (const Error&) {
    local_error = std::current_exception();
  }
  try {
    agree_on_registrations(operation, local_error);
  } catch (...) {
    if (!local_error) undo(result);
    throw;
  }
  return result;
}

KernelHandle WorkerImpl::register_kernel(std::string name, TaskFn fn) {
  check_can_register("register_kernel");
  const std::string operation = "register_kernel('" + name + "')";
  return change_registrations(
      operation, [&] { return kernels_.add_kernel(std::move(name), std::move(fn)); },
      [&](KernelHandle) { kernels_.undo_add(false); });
}

SubHandle WorkerImpl::register_sub(std::string name, TaskFn fn) {
  check_can_register("register_sub");
  const std::string operation = "register_sub('" + name + "')";
  return change_registrations(
      operation, [&] { return kernels_.add_sub(std::move(name), std::move(fn)); },
      [&](SubHandle) { kernels_.undo_add(true); });
}

void WorkerImpl::unregister(bool sub, uint32_t fn, const char* operation) {
  check_can_register(operation);
  change_registrations(
      operation,
      [&] {
        kernels_.remove(sub, fn);
        return true;
      },
      [&](bool) { kernels_.undo_remove(sub, fn); });
}

// After init: every rank's table must read the same, and every rank's change must have
// succeeded. One allgather of (signature hash, ok) under the worker's timeout.
void WorkerImpl::agree_on_registrations(const std::string& operation,
                                        std::exception_ptr local_error) {
  const uint64_t mine[2] = {std::hash<std::string>{}(kernels_.signature()), local_error ? 0u : 1u};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size_));
  MPI_Request request;
  transport::check_mpi(
      MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD, &request),
      "MPI_Iallgather(registrations)");
  const auto wait = [&] { context_->mpi_wait(request, operation + " (agreeing with every rank)"); };
  if (is_host()) {
    scheduler_->exclusively(wait);  // its thread progresses UCX between runs too
  } else {
    wait();
  }
  if (local_error) std::rethrow_exception(local_error);
  for (int r = 0; r < size_; ++r) {
    if (all[2 * r + 1] == 0) {
      throw InvalidArgument(operation + ": rank " + std::to_string(r) +
                            " refused it, so no rank keeps it (see rank " + std::to_string(r) +
                            "'s error)");
    }
    if (all[2 * r] != all[0]) {
      throw InvalidArgument(operation + ": rank " + std::to_string(r) +
                            " registered different kernels or subs than rank 0; register and "
                            "unregister the same names in the same order on every rank");
    }
  }
}

// Every rank must register the same kernels and subs, in the same order.
void WorkerImpl::check_registrations_match() {
  const std::string signature = kernels_.signature();
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
  in_run_ = true;
  struct RunEnds {
    bool& in_run;
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

const runtime::Scheduler& WorkerImpl::host_scheduler(const char* operation) const {
  check_state(State::kReady, operation);
  if (!is_host()) {
    throw InvalidState(std::string(operation) + ": the host keeps this record; call it on rank 0");
  }
  return *scheduler_;
}

HostBuffer WorkerImpl::create_buffer(size_t bytes) {
  check_state(State::kReady, "create_buffer");
  if (is_host()) return scheduler_->create_buffer(bytes);
  auto state = std::make_shared<HostBufferState>();  // names nothing here
  state->bytes = bytes;
  return HostBufferState::handle(std::move(state));
}

void WorkerImpl::release_buffer(HostBuffer& buffer) {
  check_state(State::kReady, "release_buffer");
  if (is_host()) return scheduler_->release_buffer(buffer);
  if (const auto& state = HostBufferState::of(buffer)) state->released = true;
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
