// all_to_all, pushed (small blocks, up to CollContext::kInboxBytes): each member stores block p
// of its input and a sequence flag into its slot of member p's inbox, then copies each peer's
// block out of its own inbox once the flag arrives. One round; slots reused as in the pushed
// allgather. In place (send == recv) is safe: every block is pushed before any is overwritten.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask all_to_all_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                           size_t block_bytes) {
  const size_t me = static_cast<size_t>(c.rank());
  const uint64_t sequence = c.next_inbox_sequence();
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.push(p, sequence, send + static_cast<size_t>(p) * block_bytes, block_bytes);
  }
  if (send != recv) std::memmove(recv + me * block_bytes, send + me * block_bytes, block_bytes);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    co_await c.await_push(p, sequence);
    std::memcpy(recv + static_cast<size_t>(p) * block_bytes, c.inbox_payload(sequence, p),
                block_bytes);
  }
}

}  // namespace rankflow::coll
