// The reading protocol of the two-phase allreduce on plain memory (allreduce_twophase_read.h).
//
// Staged, as allreduce_twophase.cpp runs plain buffers otherwise, a member's part of a peer's
// input crosses three times: the peer copies it into its window, the owner reads those fresh
// lines out of the peer's cache as it reduces, then hands the reduced part back with one kernel
// copy. Here the owner reads the peer's input itself, with one kernel copy into its own recv (the
// part's destination), adds its own input there while the chunk is in its cache, and hands the
// chunk to each peer with one more kernel copy: no staging, no window, no round a segment. On the
// 2-core Intel Xeon (Emerald Rapids) of 2026-12-06 the bare protocol (no library,
// docs/data/ab-intel-emr-2026-12-06-reads/allreduce-floor.cpp, two rounds) took 488-527 us at
// 4 MiB where the staged shape took 560-639, and 1046-1205 against 1413-1428 at 8 MiB (with
// fresh input 528-592 against 633-661, and 1353-1400 against 1593-1735).
//
// Every member must agree, and a member offers only what it can keep: its header
// (part_hand_off.h) says it reads where its copies have reached every peer before (a refused
// read could not be delivered another way), out of place (in place, reading a peer's chunk into
// recv would overwrite the input it adds), with no wider accumulator (f16, bf16), and where the
// agreed profile's TwophaseSegments::reads_from allows it at this size on two members
// (RANKFLOW_CROSS_MEMORY_DIRECTION=read offers at any size and member count where hand-off
// runs, write never). The call reads only where every member offered; otherwise it stages.
// Runs on the thread that drives the collective.
#include "collectives/allreduce_twophase_read.h"

#include <algorithm>

#include "collectives/process_memory.h"
#include "common/env.h"

namespace rankflow::coll {
namespace {

// Chunks of this many bytes: read, reduced and handed on while in cache (the floor at 4-8 MiB:
// 512 KiB the steadiest, 256 KiB as fast in some rounds and far slower in others, 1 MiB slower;
// in rankflow, four alternated launches at 2-8 MiB: 512 KiB x1.78-1.85 of Open MPI's busbw,
// 256 KiB x1.65-1.79, 1 MiB x1.64-1.67, 2 MiB x1.59-1.63; read-chunks.log beside the floor).
constexpr size_t kReadChunkBytes = 512 * 1024;

bool reads_at_this_size(const CollContext& c, const AllreduceArgs& a) {
  static const env::CrossMemoryDirection direction = env::cross_memory_direction();
  if (direction == env::CrossMemoryDirection::kWrite) return false;
  if (direction == env::CrossMemoryDirection::kRead) return true;
  return c.size() == 2 && a.count * a.reducer->elem_size >= a.segments.reads_from;
}

}  // namespace

bool twophase_reads_forced() {
  static const bool forced = env::cross_memory_direction() == env::CrossMemoryDirection::kRead;
  return forced;
}

bool twophase_offers_reads(CollContext& c, const AllreduceArgs& a) {
  if (!plain_and_apart(a) || a.reducer->acc_size != a.reducer->elem_size ||
      !process_memory_usable() || !reads_at_this_size(c, a))
    return false;
  for (int d = 1; d < c.size(); ++d)
    if (!copies_reached(c.team().process_of(c.peer(d)))) return false;
  return true;
}

namespace {

size_t chunk_elements(const AllreduceArgs& a) {
  return std::max<size_t>(1, kReadChunkBytes / a.reducer->elem_size);
}

// The scratch a further peer's chunk goes through (three members or more), or null.
std::byte* scratch_for_further_peers(CollContext& c, const AllreduceArgs& a) {
  if (c.size() <= 2) return nullptr;
  const Segment mine = partition(a.count, c.size(), c.rank());
  return c.scratch2(std::min(chunk_elements(a), mine.count) * a.reducer->elem_size);
}

}  // namespace

void prepare_reading(CollContext& c, const AllreduceArgs& a) {
  scratch_for_further_peers(c, a);
}

bool reduce_part_by_reading(CollContext& c, const AllreduceArgs& a, const PartHandOff& peers) {
  const Reducer& r = *a.reducer;
  const size_t es = r.elem_size;
  const Segment mine = partition(a.count, c.size(), c.rank());
  const size_t chunk = chunk_elements(a);
  std::byte* other = scratch_for_further_peers(c, a);  // grown by prepare_reading: no throw here
  for (size_t first = 0; first < mine.count; first += chunk) {
    const size_t count = std::min(chunk, mine.count - first);
    const size_t at = (mine.begin + first) * es;
    std::byte* out = a.dst_ptr + at;
    // The first peer's chunk straight into recv, the own input added there; any further peer's
    // through scratch.
    for (int d = 1; d < c.size(); ++d) {
      const PartHandOff::PeerBuffers peer = peers.buffers_of(c.peer(d));
      std::byte* into = d == 1 ? out : other;
      if (!read_process_memory(peer.pid, peer.send + at, into, count * es)) return false;
      if (d == 1)
        r.combine(out, a.src_ptr + at, count);
      else
        r.combine(out, other, count);
    }
    for (int d = 1; d < c.size(); ++d) {
      const PartHandOff::PeerBuffers peer = peers.buffers_of(c.peer(d));
      if (!write_promised_process_memory(peer.pid, peer.recv + at, out, count * es)) return false;
    }
  }
  return true;
}

}  // namespace rankflow::coll
