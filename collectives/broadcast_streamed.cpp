// broadcast, streamed (up to CollContext::kStreamBytes, 512 B): the root sends the message down
// its stream to every peer (AckedStream, collectives/stream.h) and returns at once; each peer
// waits for the message's flag, copies it out and marks it consumed (the stream acknowledges
// every few messages). A root runs up to a stream's depth (64 or 256 broadcasts) ahead of a slow
// peer, so back-to-back small broadcasts overlap as an eager protocol's do. The message's size
// picks the stream (CollContext::kBroadcastStreams): up to 8 B four to a cache line, up to 24 B
// two, so a root running ahead hands over one line per few broadcasts. The root's part, and a
// peer's whose message is already there, run in the call itself. Any memory, any number of
// members.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

bool broadcast_streams(const CollContext& c, size_t bytes) {
  return c.has_inbox() && bytes <= CollContext::kStreamBytes;
}

namespace {

// A peer's part once `message` has arrived: copy the payload out, mark it consumed.
void take(AckedStream& stream, std::byte* buffer, size_t bytes, int root, uint64_t message) {
  if (bytes > 0) std::memcpy(buffer, stream.payload(root, message, bytes), bytes);
  stream.consumed(root, message);
}

CollTask take_when_it_arrives(AckedStream& stream, std::byte* buffer, size_t bytes, int root,
                              uint64_t message) {
  co_await stream.await_message(root, message);
  take(stream, buffer, bytes, root, message);
}

}  // namespace

// The root and a peer whose message is already there finish here, without a task to suspend
// (a coroutine frame's set-up and tear-down were a sixth of a 4 B broadcast's instructions).
CollTask broadcast_streamed(CollContext& c, std::byte* buffer, size_t bytes, int root) {
  // Every member takes the same stream for the same call (bytes match), so each stream's
  // messages stay in call order.
  AckedStream& stream = c.broadcast_stream(bytes);
  if (c.rank() == root) {
    for (int d = 1; d < c.size(); ++d)
      stream.send(c.peer(d), buffer, bytes);
    return CollTask::finished();
  }
  const uint64_t message = stream.next_message(root);
  if (!stream.await_message(root, message).satisfied())
    return take_when_it_arrives(stream, buffer, bytes, root, message);
  take(stream, buffer, bytes, root, message);
  return CollTask::finished();
}

}  // namespace rankflow::coll
