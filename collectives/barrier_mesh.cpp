// barrier, mesh: one "ready" signal from every member to every other. O(P) signals per member;
// the blocking Communicator::barrier uses the team's dissemination barrier (log P rounds), and
// this one serves ibarrier, where a coroutine can wait without blocking.
#include "collectives/collective.h"

namespace rankflow::coll {

// The arrival check before Open MPI's own collective: a kind of its own, so that a member
// running one of rankflow's algorithms (whose first round is kReady too) can never satisfy it.
const SignalKind kArrived("barrier.arrived");

CollTask barrier_mesh(CollContext& c) {
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
}

CollTask barrier_arrival(CollContext& c) {
  c.notify_all(kArrived);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kArrived);
}

}  // namespace rankflow::coll
