// Bad input to communicator.h (issue 12): one table, run on every rank (bad_input_library.h).
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bad_input_library.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;
using E = ErrorCode;

// Sets an environment variable for the guard's lifetime.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvGuard() { unsetenv(name_); }

 private:
  const char* name_;
};

// Every rank's Request::wait(timeout) on rank 0 alone times out; then the others join, so the
// request completes and the communicator is in step again (a Timeout does not cancel).
void wait_alone_then_complete(Communicator& c, Request (*start)(Communicator&)) {
  if (c.rank() != 0) {
    world_barrier("rank 0's timed-out wait");
    start(c).wait();
    return;
  }
  Request r = start(c);
  try {
    r.wait(300ms);
  } catch (const Timeout&) {
    world_barrier("rank 0's timed-out wait");
    r.wait();
    throw;
  }
  world_barrier("rank 0's timed-out wait");
  r.wait();
}

TEST(BadInput, CommunicatorH) {
  const int n = context().world_size(), last = n - 1;
  const std::string sn = std::to_string(n), roots = "valid roots are 0.." + std::to_string(last);
  const std::string algorithms = "onephase, twophase, ring, bidirectional_ring, ibing, mpi";
  const std::string dtypes = "valid dtypes are f32, f64, f16, bf16, i32, i64";
  const size_t too_many = SIZE_MAX / 4 / static_cast<size_t>(n) + 1;  // f32 blocks of all members
  const auto bad_dtype = static_cast<DType>(42);
  float x[4] = {1, 2, 3, 4}, y[16] = {};
  using C = RankCase<Communicator>;
  const std::vector<C> table = {
      // Creation: the communicator, and the overrides read at creation.
      {"from_mpi(MPI_COMM_NULL)",
       [](Communicator&) { Communicator::from_mpi(MPI_COMM_NULL); },
       E::kInvalidArgument,
       {"Communicator::from_mpi: MPI_COMM_NULL"}},
      {"from_mpi of an inter-communicator",
       [](Communicator&) {
         const int me = context().world_rank();
         MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
         MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
         MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 7, &inter);
         struct Free {
           MPI_Comm& a;
           MPI_Comm& b;
           ~Free() {
             MPI_Comm_free(&a);
             MPI_Comm_free(&b);
           }
         } free_both{half, inter};
         Communicator::from_mpi(inter);
       },
       E::kInvalidArgument,
       {"Communicator::from_mpi: inter-communicators are not supported"}},
      {"RANKFLOW_ALLREDUCE naming no algorithm",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_ALLREDUCE", "tree");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_ALLREDUCE", "unknown algorithm 'tree'", algorithms}},
      {"RANKFLOW_ALLREDUCE with an empty size range",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_ALLREDUCE", "onephase:64k-32k");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_ALLREDUCE", "'onephase:64k-32k' has an empty size range"}},
      {"RANKFLOW_ALLREDUCE with a size that is not one",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_ALLREDUCE", "ring:abc-inf");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_ALLREDUCE", "'abc' in 'ring:abc-inf' is not a size"}},
      {"RANKFLOW_ALLGATHER naming no algorithm",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_ALLGATHER", "tree");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_ALLGATHER", "unknown algorithm 'tree'"}},
      {"RANKFLOW_REDUCE_SCATTER naming no algorithm",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_REDUCE_SCATTER", "tree");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_REDUCE_SCATTER", "unknown algorithm 'tree'"}},
      {"RANKFLOW_BROADCAST naming no algorithm",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_BROADCAST", "tree");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_BROADCAST", "unknown algorithm 'tree'"}},
      {"RANKFLOW_ALL_TO_ALL naming no algorithm",
       [](Communicator&) {
         EnvGuard g("RANKFLOW_ALL_TO_ALL", "tree");
         Communicator::from_mpi(MPI_COMM_WORLD);
       },
       E::kInvalidArgument,
       {"RANKFLOW_ALL_TO_ALL", "unknown algorithm 'tree'"}},
      {"split with MPI_UNDEFINED on the last rank",
       [last](Communicator& c) { c.split(c.rank() == last ? MPI_UNDEFINED : 0, 0); },
       E::kInvalidArgument,
       {"Communicator::split: color MPI_UNDEFINED leaves this rank out"},
       last},
      {"alloc larger than any window",
       [](Communicator& c) { c.alloc(size_t{1} << 50); },
       E::kInvalidArgument,
       {"Communicator::alloc: 1125899906842624 bytes", "at most"}},
      // Algorithms, dtypes, ops.
      {"allreduce with an unknown algorithm",
       [&](Communicator& c) { c.allreduce(x, y, 4, DType::kF32, ReduceOp::kSum, "tree"); },
       E::kInvalidArgument,
       {"unknown allreduce algorithm 'tree'", algorithms + " (or auto)"}},
      {"iallreduce with an unknown algorithm",
       [&](Communicator& c) { c.iallreduce(x, y, 4, DType::kF32, ReduceOp::kSum, "Ring"); },
       E::kInvalidArgument,
       {"unknown allreduce algorithm 'Ring'", algorithms}},
      {"allreduce of i8",
       [&](Communicator& c) { c.allreduce(x, y, 4, DType::kI8, ReduceOp::kSum); },
       E::kInvalidArgument,
       {"collectives do not reduce dtype i8", dtypes}},
      {"allreduce of u64",
       [&](Communicator& c) { c.allreduce(x, y, 1, DType::kU64, ReduceOp::kMax); },
       E::kInvalidArgument,
       {"collectives do not reduce dtype u64", dtypes}},
      {"allreduce of a dtype that does not exist",
       [&](Communicator& c) { c.allreduce(x, y, 4, bad_dtype, ReduceOp::kSum); },
       E::kInvalidArgument,
       {"collectives do not reduce dtype 42", dtypes}},
      {"allreduce with an op that does not exist",
       [&](Communicator& c) { c.allreduce(x, y, 4, DType::kF32, static_cast<ReduceOp>(9)); },
       E::kInvalidArgument,
       {"unknown reduction op 9; valid ops are sum, prod, min, max"}},
      {"reduce_scatter of i16",
       [&](Communicator& c) { c.reduce_scatter(y, x, 1, DType::kI16, ReduceOp::kSum); },
       E::kInvalidArgument,
       {"collectives do not reduce dtype i16", dtypes}},
      {"ireduce_scatter with an op that does not exist",
       [&](Communicator& c) { c.ireduce_scatter(y, x, 1, DType::kF32, static_cast<ReduceOp>(7)); },
       E::kInvalidArgument,
       {"unknown reduction op 7"}},
      {"allgather of a dtype that does not exist",
       [&](Communicator& c) { c.allgather(x, y, 1, bad_dtype); },
       E::kInvalidArgument,
       {"unknown dtype 42"}},
      {"broadcast of a dtype that does not exist",
       [&](Communicator& c) { c.broadcast(x, 1, bad_dtype, 0); },
       E::kInvalidArgument,
       {"unknown dtype 42"}},
      {"all_to_all of a dtype that does not exist",
       [&](Communicator& c) { c.all_to_all(y, y, 1, bad_dtype); },
       E::kInvalidArgument,
       {"unknown dtype 42"}},
      // Counts whose bytes overflow.
      {"allreduce count overflows",
       [&](Communicator& c) { c.allreduce(x, y, SIZE_MAX / 2, DType::kF32, ReduceOp::kSum); },
       E::kInvalidArgument,
       {"allreduce: count " + std::to_string(SIZE_MAX / 2) + " overflows the size of a buffer"}},
      {"allgather count overflows across the members",
       [&](Communicator& c) { c.allgather(x, y, too_many, DType::kF32); },
       E::kInvalidArgument,
       {"allgather: count " + std::to_string(too_many) + " overflows"}},
      {"iallgather count overflows",
       [&](Communicator& c) { c.iallgather(x, y, too_many, DType::kF32); },
       E::kInvalidArgument,
       {"allgather: count " + std::to_string(too_many) + " overflows"}},
      {"reduce_scatter count overflows",
       [&](Communicator& c) { c.reduce_scatter(y, x, too_many, DType::kF32, ReduceOp::kSum); },
       E::kInvalidArgument,
       {"reduce_scatter: count " + std::to_string(too_many) + " overflows"}},
      {"broadcast count overflows",
       [&](Communicator& c) { c.broadcast(x, SIZE_MAX / 2, DType::kF64, 0); },
       E::kInvalidArgument,
       {"broadcast: count " + std::to_string(SIZE_MAX / 2) + " overflows"}},
      {"iall_to_all count overflows",
       [&](Communicator& c) { c.iall_to_all(y, y, too_many, DType::kF32); },
       E::kInvalidArgument,
       {"all_to_all: count " + std::to_string(too_many) + " overflows"}},
      // Roots and timeouts.
      {"broadcast from root -1",
       [&](Communicator& c) { c.broadcast(x, 1, DType::kF32, -1); },
       E::kInvalidArgument,
       {"broadcast: root -1 is not a member", roots}},
      {"broadcast from a root past the last member",
       [&](Communicator& c) { c.broadcast(x, 1, DType::kF32, c.size()); },
       E::kInvalidArgument,
       {"broadcast: root " + sn + " is not a member", roots}},
      {"ibroadcast from a root past the last member",
       [&](Communicator& c) { c.ibroadcast(x, 1, DType::kF32, INT_MAX); },
       E::kInvalidArgument,
       {"broadcast: root " + std::to_string(INT_MAX) + " is not a member", roots}},
      {"set_timeout(0)",
       [](Communicator& c) { c.set_timeout(0s); },
       E::kInvalidArgument,
       {"Communicator::set_timeout: must be positive"}},
      {"set_timeout of a negative time",
       [](Communicator& c) { c.set_timeout(-1ms); },
       E::kInvalidArgument,
       {"Communicator::set_timeout: must be positive"}},
      // Requests.
      {"wait() on an empty request",
       [](Communicator&) { Request().wait(); },
       E::kInvalidState,
       {"Request::wait on an empty request"}},
      {"wait(timeout) on an empty request",
       [](Communicator&) { Request().wait(1s); },
       E::kInvalidState,
       {"Request::wait on an empty request"}},
      {"test() on an empty request",
       [](Communicator&) { Request().test(); },
       E::kInvalidState,
       {"Request::test on an empty request"}},
      {"Request::wait(timeout) while the others are elsewhere",
       [](Communicator& c) {
         wait_alone_then_complete(c, [](Communicator& k) { return k.ibarrier(); });
       },
       E::kTimeout,
       {"barrier: rank 0 of " + sn, "waited 0.3 s for peer"},
       0},
      {"iallreduce's wait(timeout) while the others are elsewhere",
       [](Communicator& c) {
         wait_alone_then_complete(c, [](Communicator& k) {
           static float a[4], b[4];
           return k.iallreduce(a, b, 4, DType::kF32, ReduceOp::kSum, "onephase");
         });
       },
       E::kTimeout,
       {"allreduce(onephase): rank 0 of " + sn, "waited 0.3 s for peer"},
       0},
      // A member that never arrives: the caller's Timeout names the collective, rank and peer.
      {"barrier on rank 0 alone",
       [](Communicator& c) { c.rank() == 0 ? c.barrier() : void(); },
       E::kTimeout,
       {"barrier: rank 0", "waited 0.5 s for peer", "expected >= 1, observed 0"},
       0},
      {"allreduce on rank 0 alone",
       [&](Communicator& c) {
         if (c.rank() == 0) c.allreduce(x, y, 4, DType::kF32, ReduceOp::kSum, "ring");
       },
       E::kTimeout,
       {"allreduce(ring): rank 0 of " + sn, "waited 0.5 s for peer"},
       0},
      {"allgather on rank 0 alone",
       [&](Communicator& c) { c.rank() == 0 ? c.allgather(x, y, 1, DType::kF32) : void(); },
       E::kTimeout,
       {"allgather", "rank 0 of " + sn, "waited 0.5 s for peer"},
       0},
      {"reduce_scatter on rank 0 alone",
       [&](Communicator& c) {
         if (c.rank() == 0) c.reduce_scatter(y, x, 1, DType::kF32, ReduceOp::kSum);
       },
       E::kTimeout,
       {"reduce_scatter", "rank 0 of " + sn, "waited 0.5 s for peer"},
       0},
      {"all_to_all on rank 0 alone",
       [&](Communicator& c) { c.rank() == 0 ? c.all_to_all(y, y, 1, DType::kF32) : void(); },
       E::kTimeout,
       {"all_to_all", "rank 0 of " + sn, "waited 0.5 s for peer"},
       0},
      {"broadcast awaited on the last rank while root 0 is elsewhere",
       [&](Communicator& c) { c.rank() == last ? c.broadcast(x, 4, DType::kF32, 0) : void(); },
       E::kTimeout,
       {"broadcast", "rank " + std::to_string(last) + " of " + sn, "peer 0"},
       last},
      // After close().
      {"allreduce after close",
       [&](Communicator& c) { c.allreduce(x, y, 4, DType::kF32, ReduceOp::kSum); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"iallgather after close",
       [&](Communicator& c) { c.iallgather(x, y, 1, DType::kF32); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"broadcast after close",
       [&](Communicator& c) { c.broadcast(x, 1, DType::kF32, 0); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"barrier after close",
       [](Communicator& c) { c.barrier(); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"ibarrier after close",
       [](Communicator& c) { c.ibarrier(); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"alloc after close",
       [](Communicator& c) { c.alloc(64); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"split after close",
       [](Communicator& c) { c.split(0, 0); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"mpi_comm after close",
       [](Communicator& c) { c.mpi_comm(); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
      {"set_timeout after close",
       [](Communicator& c) { c.set_timeout(1s); },
       E::kInvalidState,
       {"communicator used after close()"},
       kEveryRank,
       true},
  };
  run_rank_table<Communicator>(
      table,
      [] {
        Communicator c = Communicator::from_mpi(MPI_COMM_WORLD);
        c.set_timeout(kShort);
        return c;
      },
      [](Communicator& c) { c.close(); });
}
}  // namespace
}  // namespace rankflow::test
