// broadcast, direct: the root says "ready", every other member copies the root's buffer
// straight from its window (into `out`, the caller's own memory, when given) and says "done";
// the root returns once all are done.
#include "collectives/collective.h"

namespace rankflow::coll {

CollTask broadcast_direct(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out) {
  if (c.size() == 1 || bytes == 0) co_return;
  if (c.rank() == root) {
    c.notify_all(Purpose::kReady);
    for (int d = 1; d < c.size(); ++d)
      co_await c.await(c.peer(-d), Purpose::kDone);
    co_return;
  }
  co_await c.await(root, Purpose::kReady);
  c.fetch(root, buffer, out != nullptr ? out : c.local(buffer), bytes);
  c.complete_fetches();
  c.notify(root, Purpose::kDone);
}

}  // namespace rankflow::coll
