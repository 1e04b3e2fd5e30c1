// broadcast, streamed (up to CollContext::kStreamBytes): the root copies the message into the
// next slot of its stream to every peer and returns at once; each peer waits for its slot's flag,
// copies the message out and acknowledges every few messages (CollContext::stream_send). A root
// runs up to CollContext::kStreamSlots broadcasts ahead of a slow peer, so back-to-back small
// broadcasts overlap as an eager protocol's do. Any memory, any number of members.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

bool broadcast_streams(const CollContext& c, size_t bytes) {
  return c.has_inbox() && bytes <= CollContext::kStreamBytes;
}

CollTask broadcast_streamed(CollContext& c, std::byte* buffer, size_t bytes, int root) {
  if (c.rank() == root) {
    for (int d = 1; d < c.size(); ++d)
      c.stream_send(c.peer(d), buffer, bytes);
    co_return;
  }
  const uint64_t message = c.next_stream_message(root);
  co_await c.await_stream(root, message);
  std::memcpy(buffer, c.stream_payload(root, message), bytes);
  c.stream_consumed(root, message);
}

}  // namespace rankflow::coll
