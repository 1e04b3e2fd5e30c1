// allreduce and reduce_scatter, pushed (up to the inbox's slot: 32 KiB on up to 4 members, else
// 4 KiB): one round. Each member stores what a peer reduces (all of its input for allreduce,
// block p for member p in reduce_scatter) and a sequence flag into its slot of every peer's
// inbox, then reduces its own elements with every peer's, in rank order (so every member gets
// bit-identical results), once their flags arrive. Slots are reused as in the pushed allgather
// (PushInbox::push, collectives/inbox.h). send and recv may be any memory; in place is safe
// because everything is pushed before recv is written. A member that finds every peer's push
// already there, or whose call blocks, reduces in the call itself, with no task to suspend.
// Runs on the thread that drives the collective.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// What this member reduces from `send` and the peers' pushes: `per_peer`: block p of send goes
// to member p (reduce_scatter, `count` elements a block); else all of send to every member
// (allreduce, `count` elements).
struct PushedReduce {
  const std::byte* send;
  std::byte* recv;
  size_t count;
  const Reducer* reducer;
  bool per_peer;
  uint64_t sequence;

  size_t bytes() const { return count * reducer->elem_size; }
  const std::byte* block_for(int p) const {
    return per_peer ? send + static_cast<size_t>(p) * bytes() : send;
  }
};

// Once every peer's push for the sequence is here: reduces in rank order and consumes the pushes.
void reduce_arrived(CollContext& c, const PushedReduce& a) {
  const Reducer& r = *a.reducer;
  auto input = [&](int p) {
    return p == c.rank() ? a.block_for(p) : c.inbox().payload(p, a.sequence, a.bytes());
  };
  if (c.size() == 2) {  // one pass, straight into recv (element-wise, so in place too)
    r.reduce2(a.recv, input(0), input(1), a.count);
  } else {
    std::byte* acc = c.scratch(a.count * r.acc_size);
    accumulate_inputs(r, acc, a.count, c.size(), input);
    r.store(a.recv, acc, a.count);
  }
  for (int d = 1; d < c.size(); ++d)
    c.inbox().consumed(c.peer(-d), a.sequence, a.bytes());
}

CollTask reduce_when_pushed(CollContext& c, PushedReduce a) {
  for (int d = 1; d < c.size(); ++d)
    co_await c.inbox().await_push(c.peer(-d), a.sequence, a.bytes());
  reduce_arrived(c, a);
}

// Pushes, then reduces in the call itself where every peer's push is already here (the member
// that comes second to a small collective) or where the call blocks (waiting for the pushes
// there), else in a task that waits for them.
CollTask reduce_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                       const Reducer& r, bool per_peer) {
  const PushedReduce a{send, recv, count, &r, per_peer, c.inbox().next_sequence()};
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.inbox().push(p, a.sequence, a.block_for(p), a.bytes());
  }
  if (!c.inbox().every_push_arrived(a.sequence, a.bytes())) {
    if (!c.call_blocks()) return reduce_when_pushed(c, a);
    for (int d = 1; d < c.size(); ++d)
      c.wait_in_call(c.inbox().await_push(c.peer(-d), a.sequence, a.bytes()));
  }
  reduce_arrived(c, a);
  return CollTask::finished();
}

}  // namespace

CollTask allreduce_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                          const Reducer& r) {
  return reduce_pushed(c, send, recv, count, r, false);
}

CollTask reduce_scatter_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                               const Reducer& r) {
  return reduce_pushed(c, send, recv, count, r, true);
}

}  // namespace rankflow::coll
