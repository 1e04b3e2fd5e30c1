// all_to_all, mesh: member r copies block r of every peer's input into its block p. In place
// (src == dst) the blocks are gathered in scratch and written after the "done" round. With
// `out_ptr` (the caller's own memory, the input staged at src) they go straight there.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask all_to_all_mesh(CollContext& c, size_t src, size_t dst, size_t block_bytes,
                         std::byte* out_ptr) {
  const int n = c.size();
  const size_t me = static_cast<size_t>(c.rank());
  if (block_bytes == 0) co_return;
  const bool in_place = src == dst && out_ptr == nullptr;
  if (n == 1) {
    std::byte* out = out_ptr != nullptr ? out_ptr : c.local(dst);
    if (out != c.local(src)) std::memmove(out, c.local(src), block_bytes);
    co_return;
  }
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  std::byte* staging = in_place ? c.scratch(block_bytes * n) : nullptr;
  for (int p = 0; p < n; ++p) {
    std::byte* out = out_ptr != nullptr ? out_ptr + p * block_bytes
                     : in_place         ? staging + p * block_bytes
                                        : c.local(dst + p * block_bytes);
    c.fetch(p, src + me * block_bytes, out, block_bytes);
  }
  c.complete_fetches();
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  if (in_place) std::memcpy(c.local(dst), staging, block_bytes * n);
}

}  // namespace rankflow::coll
