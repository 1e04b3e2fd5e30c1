// allgather, mesh: each member places its block, then copies every peer's block straight from
// the peer's window. One "ready" round, one "done" round. With `out` (the caller's own memory,
// the input staged at src) peers read the block from src and the result goes straight to `out`.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask allgather_mesh(CollContext& c, size_t src, size_t dst, size_t count, size_t elem_size,
                        std::byte* out) {
  const size_t block = count * elem_size;
  const size_t me = static_cast<size_t>(c.rank());
  if (out != nullptr) {
    if (block > 0) std::memmove(out + me * block, c.local(src), block);
  } else if (src != dst + me * block && block > 0) {
    std::memmove(c.local(dst + me * block), c.local(src), block);
  }
  if (c.size() == 1 || block == 0) co_return;
  c.notify_all(Purpose::kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kReady);
  for (int d = 1; d < c.size(); ++d) {
    const size_t p = static_cast<size_t>(c.peer(d));
    if (out != nullptr) {
      c.fetch(c.peer(d), src, out + p * block, block);
    } else {
      c.fetch(c.peer(d), dst + p * block, c.local(dst + p * block), block);
    }
  }
  c.complete_fetches();
  c.notify_all(Purpose::kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kDone);
}

}  // namespace rankflow::coll
