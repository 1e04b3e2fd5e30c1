// allgather and all_to_all, pushed (blocks up to the inbox's slot: 32 KiB on up to 4 members,
// else 4 KiB): one block exchange.
// Each member stores a block and a sequence flag into its slot of every peer's inbox (the same
// block for allgather, block p for member p in all_to_all), keeps its own block, and copies each
// peer's block out of its own inbox once the flag arrives. One round, like the pushed onephase
// allreduce, whose slot reuse it shares (PushInbox::push, collectives/inbox.h). send and recv may
// be any memory; in place is safe because every block is pushed before any of recv is written.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// `per_peer`: block p of send goes to member p (all_to_all); else all of send to everyone.
CollTask exchange_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t block_bytes,
                         bool per_peer) {
  const size_t me = static_cast<size_t>(c.rank());
  auto block_for = [&](size_t p) { return per_peer ? send + p * block_bytes : send; };
  const uint64_t sequence = c.inbox().next_sequence();
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.inbox().push(p, sequence, block_for(static_cast<size_t>(p)), block_bytes);
  }
  std::byte* mine = recv + me * block_bytes;
  if (mine != block_for(me)) std::memmove(mine, block_for(me), block_bytes);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    co_await c.inbox().await_push(p, sequence);
    if (block_bytes > 0) {  // recv may be null then
      std::memcpy(recv + static_cast<size_t>(p) * block_bytes,
                  c.inbox().payload(p, sequence, block_bytes), block_bytes);
      c.inbox().consumed(p, sequence, block_bytes);
    }
  }
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
