// broadcast, pushed (above CollContext::kStreamBytes, which stream, up to the inbox's slot): the
// root stores the message and a sequence flag into its slot of every peer's push inbox and returns
// at once; each peer waits for the flag, copies the message out and acknowledges. The root never
// waits here: a later push into the same slot (two sequences on) first waits for that
// acknowledgement (PushInbox::push, collectives/inbox.h), so back-to-back broadcasts pipeline as
// an eager protocol does. Any memory.
//
// Two members only. Every other pushed collective has each member wait for every peer's push,
// which is what lets a member reuse a slot two sequences later (the peer has moved on). A
// broadcast breaks that for pairs of non-roots on three or more members (neither waits for
// the other), and acknowledging every slot would cost the symmetric collectives a signal per
// peer; with two members the root's acknowledgement covers it. More members use
// broadcast_direct at these sizes.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

bool broadcast_pushes(const CollContext& c, size_t bytes) {
  return c.size() == 2 && pushes_blocks(c, bytes);
}

namespace {

// A peer's part once the root's push is here: copy the message out, acknowledge it.
void take(CollContext& c, std::byte* buffer, size_t bytes, int root, uint64_t sequence) {
  if (bytes > 0) std::memcpy(buffer, c.inbox().payload(root, sequence, bytes), bytes);
  c.inbox().acknowledge_broadcast(root);
}

CollTask take_when_pushed(CollContext& c, std::byte* buffer, size_t bytes, int root,
                          uint64_t sequence) {
  co_await c.inbox().await_push(root, sequence, bytes);
  take(c, buffer, bytes, root, sequence);
}

}  // namespace

// The root, and a peer whose message is already here, finish in the call itself.
CollTask broadcast_pushed(CollContext& c, std::byte* buffer, size_t bytes, int root) {
  const uint64_t sequence = c.inbox().next_sequence();
  if (c.rank() == root) {
    for (int d = 1; d < c.size(); ++d)
      c.inbox().push_broadcast(c.peer(d), sequence, buffer, bytes);
    return CollTask::finished();
  }
  if (!c.inbox().await_push(root, sequence, bytes).satisfied())
    return take_when_pushed(c, buffer, bytes, root, sequence);
  take(c, buffer, bytes, root, sequence);
  return CollTask::finished();
}

}  // namespace rankflow::coll
