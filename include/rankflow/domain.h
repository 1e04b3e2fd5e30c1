// rankflow/domain.h: communication domains of the DAG runtime.
//
// A domain is a set of chip workers with an MPI communicator over exactly them and a symmetric
// window of UCX-registered memory, zeroed before any member can reach it, with named buffers at
// the same offsets on every member. The orchestration body allocates it before the run's first
// submit; kernels reach it through a task argument and see its Team (put, get, atomics, signals,
// barrier, remote_ptr), a Communicator (the collectives) and the MPI communicator:
//
//   auto tp = orch.allocate_domain("tp", {0, 1}, 1 << 20, {{"scratch", 4096}});
//   orch.submit_group(allreduce, {{in(x0), out(y0), rankflow::domain_arg(tp)},
//                                 {in(x1), out(y1), rankflow::domain_arg(tp)}}, {0, 1});
//
//   void allreduce(rankflow::TaskContext& t) {            // on each member
//     rankflow::DomainContext& d = t.domain(2);
//     d.communicator().allreduce(in, out, n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
//   }
//
// Domain ranks are dense, in the order of `workers`; a worker in two domains has a separate rank
// and window in each. A domain lives for the run that allocated it: release() ends the handle at
// once, and the memory goes after the run, when no task can use it any more.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankflow/communicator.h"
#include "rankflow/team.h"
#include "rankflow/tensor.h"
#include "rankflow/types.h"

namespace rankflow {

namespace detail {
struct DomainState;  // the runtime's record of a domain
}  // namespace detail

// The host's handle on a domain (cheap to copy; copies share one state).
class Domain {
 public:
  Domain() = default;
  const std::string& name() const;
  const std::vector<int>& workers() const;  // domain rank r is chip worker workers()[r]
  int size() const;
  // The dense rank of chip worker `worker`; InvalidArgument when it is not a member (the
  // membership test), InvalidState after release().
  int rank_of(int worker) const;
  size_t window_bytes() const;
  // Each named buffer's offset in every member's window.
  size_t buffer_offset(std::string_view buffer) const;
  // Member `worker`'s copy of named buffer `buffer` as a 1-D Tensor of `dtype` over all of its
  // bytes, for tasks on that worker (in, out, inout ... or copy_to / copy_from): they read and
  // write it in place in the member's window, and dependencies on it (and on its views) are
  // inferred as for any tensor, so a task that reads what a kernel put there waits for it. It
  // lives for the domain's run. InvalidArgument for a buffer the domain lacks, a worker that is
  // not a member, or a buffer whose size is not a multiple of dtype's; InvalidState after
  // release(); at submit, InvalidArgument on another worker or a sub-worker.
  Tensor buffer_tensor(std::string_view buffer, int worker, DType dtype = DType::kU8) const;
  template <typename T>
  Tensor buffer_tensor(std::string_view buffer, int worker) const;
  // Ends the handle now (further use is InvalidState); the memory goes after the run.
  void release();
  bool released() const;

 private:
  friend struct detail::DomainState;
  explicit Domain(std::shared_ptr<detail::DomainState> state) : state_(std::move(state)) {}
  const detail::DomainState& live(const char* operation) const;
  std::shared_ptr<detail::DomainState> state_;
};

// What a kernel sees of a domain it was given: this member's view. Valid while the task runs.
class DomainContext {
 public:
  DomainContext(std::string name, MPI_Comm comm, Team team, Communicator communicator)
      : name_(std::move(name)),
        comm_(comm),
        team_(std::move(team)),
        communicator_(std::move(communicator)) {}
  const std::string& name() const { return name_; }
  int rank() const { return team_.rank(); }
  int size() const { return team_.size(); }
  // The symmetric window: buffers by name, one-sided access to every member.
  Team& team() { return team_; }
  std::span<std::byte> buffer(std::string_view buffer) const { return team_.local(buffer); }
  template <typename T>
  std::span<T> buffer_as(std::string_view buffer) const {
    return team_.local_as<T>(buffer);
  }
  // Collectives over the members (allreduce, allgather, reduce_scatter, broadcast, ...). On
  // this domain's buffers (send and recv both in the window, at the same offsets on every
  // member) they run in place, as on Communicator::alloc() memory; other memory is staged.
  Communicator& communicator() { return communicator_; }
  // The members' MPI communicator, for the kernel's own MPI calls (ranks as rank()).
  MPI_Comm mpi_comm() const { return comm_; }

 private:
  std::string name_;
  MPI_Comm comm_;
  Team team_;
  Communicator communicator_;
};

}  // namespace rankflow
