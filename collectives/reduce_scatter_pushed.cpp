// reduce_scatter, pushed (small blocks, up to the inbox's slot): each member stores
// block p of its input and a sequence flag into its slot of member p's inbox, then reduces its
// own block with every peer's, in rank order, once their flags arrive. One round; slots reused
// as in the pushed allgather. In place (recv == send) is safe: every block is pushed before the
// result is written.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask reduce_scatter_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                               const Reducer& r) {
  const size_t block_bytes = count * r.elem_size;
  const uint64_t sequence = c.inbox().next_sequence();
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    c.inbox().push(p, sequence, send + static_cast<size_t>(p) * block_bytes, block_bytes);
  }
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(-d);
    co_await c.inbox().await_push(p, sequence);
  }
  auto input = [&](int p) {
    return p == c.rank() ? send + static_cast<size_t>(p) * block_bytes
                         : c.inbox().payload(p, sequence, block_bytes);
  };
  if (c.size() == 2) {  // one pass, straight into recv (element-wise, so in place too)
    r.reduce2(recv, input(0), input(1), count);
  } else {
    std::byte* acc = c.scratch(count * r.acc_size);
    accumulate_inputs(r, acc, count, c.size(), input);
    r.store(recv, acc, count);
  }
  for (int d = 1; d < c.size(); ++d)
    c.inbox().consumed(c.peer(-d), sequence, block_bytes);
}

}  // namespace rankflow::coll
