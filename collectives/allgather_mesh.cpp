// allgather, mesh: every member copies each peer's block straight from the peer's input (src in
// the peer's window) into its result, and its own block locally. One "ready" round (inputs in
// place), one "done" round (nobody reads my input any more). The result is dst in the window,
// or `out` (the caller's own memory, the input staged at src).
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask allgather_mesh(CollContext& c, size_t src, size_t dst, size_t count, size_t elem_size,
                        std::byte* out) {
  const size_t block = count * elem_size;
  const size_t me = static_cast<size_t>(c.rank());
  std::byte* result = out != nullptr ? out : c.local(dst);
  if (block == 0) co_return;
  if (c.size() > 1) c.notify_all(kReady);
  if (result + me * block != c.local(src)) std::memmove(result + me * block, c.local(src), block);
  if (c.size() == 1) co_return;
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  // In place, each member's input is its own block of dst; otherwise src, the same everywhere.
  const bool in_place = out == nullptr && src == dst + me * block;
  for (int d = 1; d < c.size(); ++d) {
    const size_t p = static_cast<size_t>(c.peer(d));
    c.fetch(c.peer(d), in_place ? dst + p * block : src, result + p * block, block);
  }
  c.complete_fetches();
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
}

}  // namespace rankflow::coll
