// allreduce and reduce_scatter, pushed (up to the inbox's slot: 32 KiB on up to 4 members, else
// 4 KiB): one round. Each member stores what a peer reduces (all of its input for allreduce,
// block p for member p in reduce_scatter) and a sequence flag into its slot of every peer's
// inbox, then reduces its own elements with every peer's, in rank order (so every member gets
// bit-identical results), once their flags arrive. Slots are reused as in the pushed allgather
// (PushInbox::push, collectives/inbox.h). send and recv may be any memory; in place is safe
// because everything is pushed before recv is written. Runs on the thread that drives the
// collective.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// `per_peer`: block p of send goes to member p (reduce_scatter, `count` elements a block);
// else all of send to every member (allreduce, `count` elements).
CollTask reduce_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                       const Reducer& r, bool per_peer) {
  const size_t bytes = count * r.elem_size;
  auto block_for = [&](int p) { return per_peer ? send + static_cast<size_t>(p) * bytes : send; };
  const uint64_t sequence = c.inbox().next_sequence();
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.inbox().push(p, sequence, block_for(p), bytes);
  }
  for (int d = 1; d < c.size(); ++d)
    co_await c.inbox().await_push(c.peer(-d), sequence);
  auto input = [&](int p) {
    return p == c.rank() ? block_for(p) : c.inbox().payload(p, sequence, bytes);
  };
  if (c.size() == 2) {  // one pass, straight into recv (element-wise, so in place too)
    r.reduce2(recv, input(0), input(1), count);
  } else {
    std::byte* acc = c.scratch(count * r.acc_size);
    accumulate_inputs(r, acc, count, c.size(), input);
    r.store(recv, acc, count);
  }
  for (int d = 1; d < c.size(); ++d)
    c.inbox().consumed(c.peer(-d), sequence, bytes);
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
