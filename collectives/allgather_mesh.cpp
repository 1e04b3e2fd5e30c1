// allgather, mesh: each member places its block, then copies every peer's block straight from
// the peer's window. One "ready" round, one "done" round.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask allgather_mesh(CollContext& c, size_t src, size_t dst, size_t count, size_t elem_size) {
  const size_t block = count * elem_size;
  const size_t mine = dst + static_cast<size_t>(c.rank()) * block;
  if (src != mine && block > 0) std::memmove(c.local(mine), c.local(src), block);
  if (c.size() == 1 || block == 0) co_return;
  c.notify_all(Purpose::kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kReady);
  for (int d = 1; d < c.size(); ++d) {
    const size_t offset = dst + static_cast<size_t>(c.peer(d)) * block;
    c.fetch(c.peer(d), offset, c.local(offset), block);
  }
  c.complete_fetches();
  c.notify_all(Purpose::kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kDone);
}

}  // namespace rankflow::coll
