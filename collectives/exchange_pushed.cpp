// allgather and all_to_all, pushed (blocks up to the inbox's slot: 32 KiB on up to 4 members,
// else 4 KiB): one block exchange.
// Each member stores a block and a sequence flag into its slot of every peer's inbox (the same
// block for allgather, block p for member p in all_to_all), keeps its own block, and copies each
// peer's block out of its own inbox once the flag arrives. One round, like the pushed onephase
// allreduce, whose slot reuse it shares (PushInbox::push, collectives/inbox.h). send and recv may
// be any memory; in place is safe because every block is pushed before any of recv is written.
// A member that finds every peer's push already there, or whose call blocks, copies in the call
// itself, with no task to suspend.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// One pushed exchange: `per_peer`: block p of send goes to member p (all_to_all); else all of
// send to everyone.
struct PushedExchange {
  const std::byte* send;
  std::byte* recv;
  size_t block_bytes;
  bool per_peer;
  uint64_t sequence;

  const std::byte* block_for(int p) const {
    return per_peer ? send + static_cast<size_t>(p) * block_bytes : send;
  }
};

// Once `p`'s push is here: its block out of the inbox into recv.
void copy_arrived(CollContext& c, const PushedExchange& a, int p) {
  if (a.block_bytes == 0) return;  // recv may be null then
  std::memcpy(a.recv + static_cast<size_t>(p) * a.block_bytes,
              c.inbox().payload(p, a.sequence, a.block_bytes), a.block_bytes);
  c.inbox().consumed(p, a.sequence, a.block_bytes);
}

CollTask copy_when_pushed(CollContext& c, PushedExchange a) {
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    co_await c.inbox().await_push(p, a.sequence, a.block_bytes);
    copy_arrived(c, a, p);
  }
}

// Pushes, keeps its own block, then copies the peers' blocks in the call itself where every push
// is already here or where the call blocks (taking each as it arrives), else in a task that
// takes each as it arrives.
CollTask exchange_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t block_bytes,
                         bool per_peer) {
  const PushedExchange a{send, recv, block_bytes, per_peer, c.inbox().next_sequence()};
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.inbox().push(p, a.sequence, a.block_for(p), block_bytes);
  }
  std::byte* mine = recv + static_cast<size_t>(c.rank()) * block_bytes;
  if (mine != a.block_for(c.rank())) std::memmove(mine, a.block_for(c.rank()), block_bytes);
  const bool arrived = c.inbox().every_push_arrived(a.sequence, a.block_bytes);
  if (!arrived && !c.call_blocks()) return copy_when_pushed(c, a);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    if (!arrived) c.wait_in_call(c.inbox().await_push(p, a.sequence, a.block_bytes));
    copy_arrived(c, a, p);
  }
  return CollTask::finished();
}

}  // namespace

bool pushes_blocks(const CollContext& c, size_t block_bytes) {
  return c.has_inbox() && c.size() > 1 && block_bytes > 0 &&
         block_bytes <= c.inbox().payload_bytes();
}

CollTask allgather_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                          size_t block_bytes) {
  return exchange_pushed(c, send, recv, block_bytes, false);
}

CollTask all_to_all_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                           size_t block_bytes) {
  return exchange_pushed(c, send, recv, block_bytes, true);
}

}  // namespace rankflow::coll
