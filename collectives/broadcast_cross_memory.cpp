// broadcast, cross-memory: the caller's plain buffers on one host, from kCrossMemoryFrom up, on
// up to kCrossMemoryMembers (two: see broadcast_direct.cpp). The code serves any member count,
// each peer chosen for itself; with two members that is the one peer. No staging: each peer reads
// the first (P-1)/P of the message straight from the root's buffer, and the root writes the last
// 1/P straight into each peer's buffer, one kernel copy each (process_memory.h). So the root's core
// copies as much as each peer's instead of waiting, as it does in Open MPI's single copy.
//
// Signals: each peer says "ready" with its process and buffer in its own window (PeerHeader);
// the root puts its answer after it (RootReply) and says "ready"; once it has written a peer's
// share it says "done". Each peer says "done" once it has read its share, and returns on the
// root's "done". The root answers "cross-memory" only where its first write to that process
// went through (writes_reach; the kernel's permission is the same for the peer's read). A
// peer the root cannot write (its window is not mapped: another host; the kernel refuses; the
// peer will not read) gets the broadcast_direct way: it fetches every chunk from the root's
// window, which the root stages chunk by chunk, a "ready" each. Runs on the thread that drives
// the collective.
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/collective.h"
#include "collectives/pipeline_chunks.h"
#include "collectives/process_memory.h"
#include "collectives/stage_copy.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

struct PeerHeader {  // in the peer's window at the broadcast's offset, written by the peer
  int64_t pid = 0;
  uint64_t recv = 0;
  uint64_t can_read = 0;  // process_memory_usable() in the peer
};
struct RootReply {  // after it, put there by the root
  int64_t pid = 0;
  uint64_t source = 0;
  uint64_t cross_memory = 0;  // 1: read your share from `source`; mine comes to you
};
constexpr size_t kReplyAt = 64;

// Where the root's share of every copy begins: the last 1/P of the message.
size_t root_share_at(size_t bytes, int members) {
  return bytes - bytes / static_cast<size_t>(members);
}

// The root. `from`: its caller's buffer, or this window where the message was staged whole.
CollTask root_side(CollContext& c, size_t buffer, size_t bytes, const std::byte* from,
                   bool staged_whole) {
  const size_t share_at = root_share_at(bytes, c.size());
  std::vector<PeerHeader> peers(static_cast<size_t>(c.size()));
  std::vector<char> crosses(static_cast<size_t>(c.size()), 0);
  bool anyone_fetches = false;
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    co_await c.await(p, kReady);
    peers[p] = c.read_record<PeerHeader>(p, buffer);
    crosses[p] = peers[p].can_read == 1 && c.is_process_of(p, peers[p].pid) &&
                 writes_reach(peers[p].pid, peers[p].recv + share_at, from + share_at);
    anyone_fetches = anyone_fetches || crosses[p] == 0;
    const RootReply reply{this_process(), reinterpret_cast<uint64_t>(from),
                          crosses[p] != 0 ? 1u : 0u};
    c.team().put(p, buffer + kReplyAt, &reply, sizeof reply);
  }
  const size_t chunk = broadcast_chunk_bytes(bytes);
  if (anyone_fetches && !staged_whole)
    stage_copy(c.local(buffer), from, std::min(chunk, bytes), false);
  c.complete_fetches();  // the replies, where peers are not mapped
  c.notify_all(kReady);  // the reply (and the first chunk for those who fetch)
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    if (crosses[p] == 0) continue;
    if (!write_process_memory(peers[p].pid, peers[p].recv + share_at, from + share_at,
                              bytes - share_at)) {
      throw TransportError("broadcast: rank " + std::to_string(c.rank()) +
                           " could not write its share into member " + std::to_string(p) +
                           "'s buffer (process_vm_writev refused after it had succeeded; did the "
                           "peer exit?)");
    }
    c.notify(p, kDone);  // my share is in your buffer
  }
  for (size_t first = chunk; anyone_fetches && first < bytes; first += chunk) {
    if (!staged_whole)
      stage_copy(c.local(buffer + first), from + first, std::min(chunk, bytes - first), false);
    for (int d = 1; d < c.size(); ++d) {
      if (crosses[c.peer(d)] == 0) c.notify(c.peer(d), kReady);
    }
  }
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
}

CollTask peer_side(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out) {
  const PeerHeader mine{this_process(), reinterpret_cast<uint64_t>(out),
                        process_memory_usable() ? 1u : 0u};
  std::memcpy(c.local(buffer), &mine, sizeof mine);
  PublishedProcess published(c.local(buffer));
  c.notify(root, kReady);
  co_await c.await(root, kReady);
  RootReply reply;
  std::memcpy(&reply, c.local(buffer + kReplyAt), sizeof reply);
  // The root answers "cross-memory" only where it knows this process as its peer on its host,
  // so its own pid names it here (this process may not map the root: mapping can be one-sided).
  if (reply.cross_memory == 1) {
    // A refused read still ends the protocol first: the root writes into this buffer until its
    // "done".
    const bool read =
        read_process_memory(reply.pid, reply.source, out, root_share_at(bytes, c.size()));
    c.notify(root, kDone);          // I have read your buffer (or will not)
    co_await c.await(root, kDone);  // your share is in mine
    published.withdraw();
    if (!read) {
      throw TransportError("broadcast: rank " + std::to_string(c.rank()) + " could not read root " +
                           std::to_string(root) +
                           "'s buffer (process_vm_readv refused, although the root could write "
                           "this rank's); RANKFLOW_CROSS_MEMORY=off sends broadcasts through the "
                           "windows");
    }
    co_return;
  }
  const size_t chunk = broadcast_chunk_bytes(bytes);
  for (size_t first = 0; first < bytes; first += chunk) {
    if (first > 0) co_await c.await(root, kReady);
    c.fetch(root, buffer + first, out + first, std::min(chunk, bytes - first));
  }
  c.complete_fetches();
  published.withdraw();  // the root has read the header (it answered)
  c.notify(root, kDone);
}

}  // namespace

CollTask broadcast_cross_memory(CollContext& c, size_t buffer, size_t bytes, int root,
                                std::byte* out, const std::byte* stage_from) {
  if (c.rank() != root) return peer_side(c, buffer, bytes, root, out);
  const bool staged_whole = stage_from == nullptr;  // non-blocking: staged when the call began
  return root_side(c, buffer, bytes, staged_whole ? c.local(buffer) : stage_from, staged_whole);
}

}  // namespace rankflow::coll
