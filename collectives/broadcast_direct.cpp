// broadcast, direct: the root says "ready", every other member copies the root's buffer
// straight from its window and says "done"; the root returns once all are done.
#include "collectives/collective.h"

namespace rankflow::coll {

void broadcast_direct(CollContext& c, size_t buffer, size_t bytes, int root) {
  if (c.size() == 1 || bytes == 0) return;
  if (c.rank() == root) {
    c.notify_all(Purpose::kReady);
    c.await_all(Purpose::kDone);
    return;
  }
  c.await(root, Purpose::kReady);
  c.fetch(root, buffer, c.local(buffer), bytes);
  c.complete_fetches();
  c.notify(root, Purpose::kDone);
}

}  // namespace rankflow::coll
