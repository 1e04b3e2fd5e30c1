// WorkerImpl's registrations: register_kernel, register_sub and unregister on every rank, and
// the agreement that makes them collective after init() (one MPI_Iallgather over
// MPI_COMM_WORLD of each rank's table signature and outcome). Main thread of each rank, between
// runs; the host holds its dispatcher's driver role while it waits, a chip hears the host's
// heartbeats.
#include <functional>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/worker_impl.h"
#include "transport/team_state.h"

namespace rankflow::detail {

// Registration is open before init(), and after it between runs. A run in progress (or a
// timed-out run still open on the chips) would keep the chips from the collective agreement.
void WorkerImpl::check_can_register(const char* operation) {
  if (state_ == State::kClosed) check_state(State::kReady, operation);  // "the worker is closed"
  if (in_run_) {
    throw InvalidState(std::string(operation) +
                       ": called inside a run; register and unregister between runs, on every "
                       "rank in the same order");
  }
  drain_runs();  // the chips serve every run in flight before they get here
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
  } catch (...) {  // whatever it was, this rank still takes part in the agreement
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
        kernels_.remove(sub, fn, operation);
        return true;
      },
      [&](bool) { kernels_.undo_remove(sub, fn); });
}

// Two words from every rank, in rank order. A chip waits hearing the host's heartbeats (a host
// may work long between runs); the host waits holding the driver role (its scheduler thread
// progresses UCX between runs too) under the worker's timeout. An allgather that times out
// cannot be cancelled, and the ranks would no longer know each other's tables, so the job ends
// there with the reason.
std::vector<uint64_t> WorkerImpl::gather_words(uint64_t first, uint64_t second,
                                               const std::string& operation) {
  const uint64_t mine[2] = {first, second};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size_));
  MPI_Request request;
  transport::check_mpi(
      MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD, &request),
      "MPI_Iallgather(registrations)");
  const std::string what = operation + " (agreeing with every rank)";
  try {
    if (chip_) {
      int done = 0;
      chip_->wait_for_host(
          [&] {
            transport::check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            return done != 0;
          },
          what.c_str());
    } else if (scheduler_) {
      scheduler_->exclusively([&] { context_->mpi_wait(request, what); });
    } else {
      context_->mpi_wait(request, what);  // init: no other thread yet
    }
  } catch (const Timeout& e) {
    log::error(e.what(),
               "; the ranks no longer know each other's registrations, ending the job "
               "(MPI_Abort)");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return all;
}

// After init: every rank's table must read the same, and every rank's change must have
// succeeded.
void WorkerImpl::agree_on_registrations(const std::string& operation,
                                        std::exception_ptr local_error) {
  const std::vector<uint64_t> all = gather_words(std::hash<std::string>{}(kernels_.signature()),
                                                 local_error ? 0u : 1u, operation);
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

// At init: every rank must have registered the same kernels and subs, in the same order.
void WorkerImpl::check_registrations_match() {
  const std::string signature = kernels_.signature();
  const std::vector<uint64_t> all =
      gather_words(std::hash<std::string>{}(signature), 1, "init (registration check)");
  for (int r = 0; r < size_; ++r) {
    if (all[2 * r] != all[0]) {
      throw InvalidArgument("init: rank " + std::to_string(r) +
                            " registered different kernels or subs than rank 0; register the "
                            "same names in the same order on every rank (this rank: " +
                            signature + ")");
    }
  }
}

}  // namespace rankflow::detail
