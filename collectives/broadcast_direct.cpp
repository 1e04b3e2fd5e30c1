// broadcast, direct (and staged: the chunks alone, see collective.h): the root says "ready", every
// other member copies the root's buffer straight from its window (into `out`, the caller's own
// memory, when given) and says "done"; the root returns once all are done.
//
// Plain memory (`out` given) from kCrossMemoryFrom up, on up to kCrossMemoryMembers, goes
// straight between the processes where they share a host (broadcast_cross_memory.cpp). Below,
// on more members, or for peers on another host, it goes in chunks (broadcast_chunk_bytes, 16 KiB
// up to 4 MiB): the root says "ready" per chunk, so members fetch chunk k while the root stages
// chunk k+1 from `stage_from` (its caller's buffer; null when the whole message was staged before
// the call, as non-blocking calls do).
//
// Two members on symmetric memory, from kSplitFrom up: the copy is split between both cores.
// The root stores the second half straight into the peer's buffer while the peer fetches the
// first half, so each core copies half the message (one more round of signals: the peer's
// "ready" says its buffer may be written, the root's "done" says its half has landed).
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"
#include "collectives/pipeline_chunks.h"
#include "collectives/stage_copy.h"

namespace rankflow::coll {
namespace {

constexpr size_t kSplitFrom = 256 * 1024;
// Plain memory from here goes straight between the processes (broadcast_cross_memory.cpp):
// forced at 32 KiB x1.10 of Open MPI against its own transfer's x1.00, at 8-16 KiB x0.76-0.85
// (2026-12-03 late night, three runs); at 16 KiB on 2026-12-05 x1.00-1.08 (median x1.06 of
// twelve launches in both modes; 8 KiB x0.90-0.94), where the Open MPI transfer the tables
// chose ran x0.91-0.98 (docs/data/ab-amd-zen4-2026-12-05-direction/bc16.log). The tables choose
// it from 64 KiB (tables.cpp), the AMD profile from 16 KiB (machine_profile.cpp).
constexpr size_t kCrossMemoryFrom = 16 * 1024;
// ... on up to this many members. On the 16-core Intel Xeon of 2026-12-04 (plain buffers, 16 KiB
// to 16 MiB, old and new builds alternately, two runs each) the chunks read from the root's
// window ran x1.53-2.55 of Open MPI's busbw on 4 members, x2.51-3.32 on 8 and x1.39-2.91 on 16,
// where the cross-memory broadcast ran x0.99-2.32, x0.79-1.64 and x0.25-0.58: every peer's
// kernel copy pins the root's pages at the same time (likely the cost; not profiled, that
// machine has no perf). Two members keep it (x1.46-2.00, the 2-core sweeps).
constexpr int kCrossMemoryMembers = 2;

CollTask broadcast_split(CollContext& c, size_t buffer, size_t bytes, int root) {
  const size_t half = bytes / 2;
  const int peer = c.peer(1);
  c.notify(peer, kReady);
  co_await c.await(peer, kReady);
  if (c.rank() == root) {
    c.team().put(peer, buffer + half, c.local(buffer + half), bytes - half);
    c.complete_fetches();
    c.notify(peer, kDone);          // my half is in your buffer
    co_await c.await(peer, kDone);  // you have read the first half
    co_return;
  }
  c.fetch(root, buffer, c.local(buffer), half);
  c.complete_fetches();
  c.notify(root, kDone);
  co_await c.await(root, kDone);
}

CollTask broadcast_fetch(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out,
                         const std::byte* stage_from, bool streams) {
  const size_t chunk = out != nullptr ? broadcast_chunk_bytes(bytes) : bytes;
  if (c.rank() == root) {
    for (size_t first = 0; first < bytes; first += chunk) {
      const size_t length = std::min(chunk, bytes - first);
      if (stage_from != nullptr)
        stage_copy(c.local(buffer + first), stage_from + first, length, streams);
      c.notify_all(kReady);
    }
    for (int d = 1; d < c.size(); ++d)
      co_await c.await(c.peer(-d), kDone);
    co_return;
  }
  std::byte* to = out != nullptr ? out : c.local(buffer);
  for (size_t first = 0; first < bytes; first += chunk) {
    co_await c.await(root, kReady);
    c.fetch(root, buffer + first, to + first, std::min(chunk, bytes - first));
  }
  c.complete_fetches();
  c.notify(root, kDone);
}

}  // namespace

CollTask broadcast_direct(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out,
                          const std::byte* stage_from, bool stream_staging) {
  if (c.size() == 1 || bytes == 0) return CollTask::finished();
  if (out != nullptr && bytes >= kCrossMemoryFrom && c.size() <= kCrossMemoryMembers) {
    return broadcast_cross_memory(c, buffer, bytes, root, out, stage_from);
  }
  if (c.size() == 2 && out == nullptr && bytes >= kSplitFrom) {
    return broadcast_split(c, buffer, bytes, root);
  }
  return broadcast_fetch(c, buffer, bytes, root, out, stage_from, stream_staging);
}

CollTask broadcast_staged(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out,
                          const std::byte* stage_from, bool stream_staging) {
  if (c.size() == 1 || bytes == 0) return CollTask::finished();
  return broadcast_fetch(c, buffer, bytes, root, out, stage_from, stream_staging);
}

}  // namespace rankflow::coll
