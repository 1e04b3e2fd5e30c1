// allgather, pushed (small blocks, up to CollContext::kInboxBytes): each member stores its block
// and a sequence flag into its slot of every peer's inbox, then copies every peer's block out of
// its own inbox once the flag arrives. One round, like the pushed onephase allreduce (whose slot
// parity argument it shares: every member waits for every other, so a slot is reused only after
// its reader moved on). send and recv may be any memory.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

bool pushes_blocks(const CollContext& c, size_t block_bytes) {
  return c.has_inbox() && c.size() > 1 && block_bytes > 0 &&
         block_bytes <= CollContext::kInboxBytes;
}

CollTask allgather_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                          size_t block_bytes) {
  const uint64_t sequence = c.next_inbox_sequence();
  for (int d = 1; d < c.size(); ++d)
    c.push(c.peer(d), sequence, send, block_bytes);
  std::byte* mine = recv + static_cast<size_t>(c.rank()) * block_bytes;
  if (mine != send) std::memmove(mine, send, block_bytes);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    co_await c.await_push(p, sequence);
    std::memcpy(recv + static_cast<size_t>(p) * block_bytes, c.inbox_payload(sequence, p),
                block_bytes);
  }
}

}  // namespace rankflow::coll
