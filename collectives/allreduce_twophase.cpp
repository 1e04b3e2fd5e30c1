// allreduce, two phases: reduce-scatter (member r reduces part r of every input, in rank order)
// then allgather. Each member reads 2(P-1)/P of the message instead of (P-1), so it wins for
// large messages on more than two ranks. Parts need not be equal: any count works.
//
// Symmetric buffers: each owner stores its reduced part straight into every peer's dst, block
// by block while the block is in cache, so the allgather costs no round of its own: two rounds
// of signals (inputs ready; parts delivered). Plain buffers are staged; each owner reduces its
// part straight into the caller's recv and, where every segment is the same length, hands it
// into every peer's recv with one kernel copy (part_hand_off.h); otherwise each member gathers
// the parts from their owners' windows. Where every member offers to stream (from the agreed
// profile's TwophaseSegments::streams_from, out of place, two members on one host), nothing is
// handed off: each owner reduces its part into its window and streams it into its recv, and each
// member streams the peer's part out of the peer's window, with non-temporal stores (a recv that
// large is not in cache: ordinary stores would fetch every line first, and the kernel's copies
// into it run at a third of a stream's speed). Two rounds a segment and a closing one. Where every
// member offers to read instead (allreduce_twophase_read.h), nothing is staged: after the first
// round each owner reads its part of the peers' inputs and writes the sum into their recv, then the
// closing round; where only some offered, one more round lets them stage the first segment. Runs on
// the thread that drives the collective.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "collectives/allreduce_twophase_read.h"
#include "collectives/collective.h"
#include "collectives/part_hand_off.h"
#include "collectives/stage_copy.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

constexpr size_t kTwophaseReduceBlockBytes = 64 * 1024;

// Reduces part `mine` of every member's input into this member's dst. Where the accumulator is
// the element type, in cache-sized blocks: a fused pass over this member's input and the next
// one's, then the others folded in (each block stays in cache). In place is safe: only this
// member reads its own part, and the first pass aliases dst with its own input element-wise.
// f16/bf16 accumulate all inputs in f32 and round once. With `deliver`, each reduced block is
// also stored into every peer's dst (the peer's kReady says its dst is free; only this member
// writes that part there, after reading the same block of the peer's input).
void deliver_block(CollContext& c, size_t dst, const std::byte* block, size_t bytes) {
  for (int d = 1; d < c.size(); ++d)
    c.team().put(c.peer(d), dst, block, bytes);
}

// Where reduce_part puts the reduced part: into dst in the window (and the caller's recv too,
// when given, with ordinary stores or non-temporal ones where every member streams:
// PartHandOff::everyone_streams), or only into the caller's recv (the owner then writes it into
// its peers' recv).
enum class PartGoes { kToWindow, kToWindowAndStreamed, kToRecvOnly };

// Whether this member offers to stream the parts into recv (TwophaseSegments::streams_from):
// two members that map each other's windows, a call in segments (so the window's first segment
// is reused and stays in cache), out of place (in place, recv is the input this member has just
// read, in cache: the hand-off's copies are faster there), no wider accumulator. The call
// streams where every member offered (PartHandOff::everyone_streams).
bool offers_to_stream(const CollContext& c, const AllreduceArgs& a, size_t segment) {
  return c.size() == 2 && c.eager() && plain_and_apart(a) && segment < a.count &&
         a.reducer->acc_size == a.reducer->elem_size &&
         a.count * a.reducer->elem_size >= a.segments.streams_from;
}

// The offer this member makes in its PartHandOff header: reading where
// RANKFLOW_CROSS_MEMORY_DIRECTION=read forces it, else streaming where it may, else reading
// where the profile says so.
PartHandOff::Offer offer_of(CollContext& c, const AllreduceArgs& a, size_t segment) {
  const bool reads = twophase_offers_reads(c, a);
  if (reads && twophase_reads_forced()) return PartHandOff::Offer::kReads;
  if (offers_to_stream(c, a, segment)) return PartHandOff::Offer::kStreams;
  return reads ? PartHandOff::Offer::kReads : PartHandOff::Offer::kHandOff;
}

// A plain twophase call that streamed its parts, for tests (twophase_streamed_calls).
std::atomic<uint64_t> g_streamed_calls{0};

// Copies the reduced block at `out` into the caller's recv at `to`.
void copy_into_recv(std::byte* to, const std::byte* out, size_t bytes, PartGoes goes) {
  if (goes == PartGoes::kToWindowAndStreamed)
    stream_copy(to, out, bytes);
  else
    std::memcpy(to, out, bytes);
}

void reduce_part(CollContext& c, const AllreduceArgs& a, Segment mine, bool deliver,
                 PartGoes goes = PartGoes::kToWindow) {
  const Reducer& r = *a.reducer;
  const size_t es = r.elem_size;
  const int n = c.size();
  const bool recv_only = goes == PartGoes::kToRecvOnly;
  if (r.acc_size == es) {
    const size_t block = std::max<size_t>(1, kTwophaseReduceBlockBytes / es);
    std::byte* fallback = c.scratch2(std::min(mine.count, block) * es);
    for (size_t first = 0; first < mine.count; first += block) {
      const size_t count = std::min(block, mine.count - first);
      const size_t offset = (mine.begin + first) * es;
      std::byte* out = recv_only ? a.dst_ptr + offset : c.local(a.dst + offset);
      const std::byte* own = a.src_ptr ? a.src_ptr + offset : c.local(a.src + offset);
      r.reduce2(out, own, c.read(c.peer(1), a.src + offset, count * es, fallback), count);
      for (int d = 2; d < n; ++d) {
        r.combine(out, c.read(c.peer(d), a.src + offset, count * es, fallback), count);
      }
      if (a.dst_ptr && !recv_only) copy_into_recv(a.dst_ptr + offset, out, count * es, goes);
      if (deliver) deliver_block(c, a.dst + offset, out, count * es);
    }
    return;
  }
  // A wider accumulator (f16, bf16): never streamed (offers_to_stream), so `goes` is kToWindow
  // or kToRecvOnly here.
  std::byte* acc = c.scratch(mine.count * r.acc_size);
  std::byte* fallback = c.scratch2(mine.count * es);
  accumulate_inputs(r, acc, mine.count, n, [&](int p) {
    return p == c.rank() && a.src_ptr
               ? a.src_ptr + mine.begin * es
               : c.read(p, a.src + mine.begin * es, mine.count * es, fallback);
  });
  if (recv_only) {
    r.store(a.dst_ptr + mine.begin * es, acc, mine.count);
    return;
  }
  r.store(c.local(a.dst + mine.begin * es), acc, mine.count);
  if (deliver)
    deliver_block(c, a.dst + mine.begin * es, c.local(a.dst + mine.begin * es), mine.count * es);
  if (a.dst_ptr) {
    std::memcpy(a.dst_ptr + mine.begin * es, c.local(a.dst + mine.begin * es), mine.count * es);
  }
}

// The caller's memory: stages only the parts of `a` that peers read (they wait for kReady).
void stage_for_peers(CollContext& c, const AllreduceArgs& a) {
  const size_t es = a.reducer->elem_size;
  for (int p = 0; p < c.size(); ++p) {
    const Segment part = partition(a.count, c.size(), p);
    if (p == c.rank() || part.count == 0) continue;
    std::memcpy(c.local(a.src + part.begin * es), a.src_ptr + part.begin * es, part.count * es);
  }
}

// Allgather: each part from its owner, into the caller's memory when a.dst_ptr (our own part
// went there block by block as it was reduced, while in cache); `streamed`: straight out of the
// owner's mapped window with non-temporal stores (PartHandOff::everyone_streams).
void gather_parts(CollContext& c, const AllreduceArgs& a, bool streamed = false) {
  const size_t es = a.reducer->elem_size;
  std::byte* out = a.dst_ptr ? a.dst_ptr : c.local(a.dst);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    const Segment part = partition(a.count, c.size(), p);
    if (part.count == 0) continue;
    std::byte* to = out + part.begin * es;
    const size_t bytes = part.count * es;
    if (!streamed) {
      c.fetch(p, a.dst + part.begin * es, to, bytes);
      continue;
    }
    const std::byte* from = c.read(p, a.dst + part.begin * es, bytes, to);
    if (from != to) stream_copy(to, from, bytes);
  }
  c.complete_fetches();
}

// The reading protocol, after the closing round: where a member (this one or a peer) could not
// make its part, every member throws rather than return a recv with a part missing.
void throw_if_part_missing(CollContext& c, const PartHandOff& peers) {
  const int missing = peers.member_whose_part_is_missing();
  if (missing < 0 && !peers.said_part_missing()) return;
  throw TransportError(
      "allreduce(twophase): rank " + std::to_string(c.rank()) + ": the part of member " +
      std::to_string(missing < 0 ? c.rank() : missing) +
      " is missing: the kernel refused a process_vm_readv or process_vm_writev between members "
      "whose copies had gone through before (did a member exit?); "
      "RANKFLOW_CROSS_MEMORY_DIRECTION=write stages the inputs instead");
}

}  // namespace

// The tables' split (TwophaseSegments{}): segments of at least 1 MiB (half the 2 MiB L2 of a
// core on the Intel Xeon of 2026-12-03; 512 KiB segments tied within the noise) and at most 4
// segments a call (counted in elements, so rounding never makes a fifth), up to 4 MiB. Each
// segment costs two rounds of signals, and more of them collapsed the 16 MiB call on the loaded
// machine of 2026-12-03 night (16 segments x0.63-0.78 of Open MPI, 8 x0.73-1.11, 4 x1.24-1.52;
// docs/performance.md). Larger messages go whole. Segments reuse the window's first segment
// (below), so a member stages into lines its peer has just read; where the two cores sit on
// different core complexes (the AMD EPYC of 2026-12-04 in its slow mode) every such store takes
// the line back across them: 8 and 16 MiB in four segments ran x0.84-1.30 and x0.83-1.69 of Open
// MPI's busbw there, whole x1.43-1.82 and x1.49-1.76 (in the fast mode x1.70-2.01 segmented
// against x1.46-1.55 whole; segments without the reuse x1.25-1.89; the same builds alternately,
// eight launches each, docs/performance.md). 32-64 MiB in segments measured slower on the Intel
// Xeon too (4 segments x1.42-1.45 against x1.81-1.92 whole; 256 KiB-2 MiB segments x1.2-7
// slower). The Zen 5 and intel-emr profiles split larger messages into 1 MiB segments too
// (machine_profile.cpp), but only where they come out all the same length: only then are the
// reduced parts handed to the peers (PartHandOff::fits), and on the Zen 5 a split with a shorter
// last segment (so no hand-off) ran no faster than whole (8 MiB x1.58 against x1.62, 16 MiB x1.63
// against x1.86, three alternated launches,
// docs/data/ab-amd-zen5-2026-12-05-fetch-ahead/twophase-odd-segments.log).
uint64_t twophase_streamed_calls() {
  return g_streamed_calls.load(std::memory_order_relaxed);
}

size_t twophase_segment_elements(size_t count, size_t elem_size, const TwophaseSegments& split) {
  if (count * elem_size > split.segmented_up_to) return count;
  const size_t max_segments = std::max<size_t>(1, split.max_segments);
  const size_t segment = std::max(std::max<size_t>(1, TwophaseSegments::kMinBytes / elem_size),
                                  count / max_segments + (count % max_segments != 0 ? 1 : 0));
  const bool beyond_the_tables = count * elem_size > TwophaseSegments{}.segmented_up_to;
  return beyond_the_tables && !PartHandOff::splits_evenly(count, segment) ? count : segment;
}

CollTask allreduce_twophase(CollContext& c, AllreduceArgs a) {
  const Reducer& r = *a.reducer;
  const size_t es = r.elem_size;
  if (c.size() == 1 || a.count == 0) {
    std::byte* out = a.dst_ptr ? a.dst_ptr : c.local(a.dst);
    const std::byte* in = a.src_ptr ? a.src_ptr : c.local(a.src);
    if (out != in) std::memmove(out, in, a.count * es);
    co_return;
  }
  // Large messages go in segments, each through both phases, so that what a segment stages,
  // reduces and gathers is nearer in cache when the next step touches it. Only the last segment
  // needs the final kDone: the signals of the next segment order the reuse of the window (below).
  const int n = c.size();
  if (!a.src_ptr && !a.dst_ptr) {  // symmetric: the owners deliver the parts
    c.notify_all(kReady);
    for (int d = 1; d < n; ++d)
      co_await c.await(c.peer(-d), kReady);
    const Segment mine = partition(a.count, n, c.rank());
    if (mine.count > 0) reduce_part(c, a, mine, true);
    c.complete_fetches();   // puts where peers are not mapped
    c.notify_all(kReady2);  // your part is in your dst; I have read your input
    for (int d = 1; d < n; ++d)
      co_await c.await(c.peer(-d), kReady2);
    co_return;
  }
  const size_t segment = std::min(twophase_segment_elements(a.count, es, a.segments), a.count);
  // When this call stages every segment itself and gathers into the caller's recv, the segments
  // reuse the window's first segment instead of sweeping the whole message's window, so the
  // staging stays in cache. The signals already order the reuse out of place: a member stages
  // segment k + 1 only after kReady2 of k, when its peers have read its staged input, and writes
  // its reduced part of k + 1 only after their kReady of k + 1, sent once they gathered k. In
  // place the staged input and the reduced parts share one region, and a shorter last segment
  // moves the parts' boundaries, so its staging could overwrite a reduced part of k that a peer
  // is still gathering: in-place calls alternate two regions (staging k + 2 waits for kReady2
  // of k + 1, which peers send after they gathered k).
  const bool reuse_window = a.src_ptr != nullptr && a.dst_ptr != nullptr;
  const bool in_place = a.src == a.dst;
  std::optional<PartHandOff> hand_off;
  if (PartHandOff::fits(c, a, segment)) {
    hand_off.emplace(c, a, segment, offer_of(c, a, segment));
    if (hand_off->offers_reads()) prepare_reading(c, a);
  }
  bool read_parts = false;
  bool streamed = false;  // every member offered to stream: no hand-off
  size_t index = 0;
  for (size_t first = 0; first < a.count; first += segment, ++index) {
    AllreduceArgs s = a;
    s.count = std::min(segment, a.count - first);
    const size_t region = !reuse_window ? first : in_place ? (index % 2) * segment : 0;
    s.src += region * es;
    s.dst += region * es;
    if (s.src_ptr) s.src_ptr += first * es;
    if (s.dst_ptr) s.dst_ptr += first * es;
    // A member that offers to read stages nothing before it knows every member did.
    const bool offering = index == 0 && hand_off && hand_off->offers_reads();
    if (s.src_ptr && !offering) stage_for_peers(c, s);
    c.notify_all(kReady);
    for (int d = 1; d < n; ++d)
      co_await c.await(c.peer(-d), kReady);
    if (index == 0 && hand_off) {
      hand_off->learn_peers();
      if (const int unlike = hand_off->member_unlike_in_place(); unlike >= 0) {
        // Every member sees it: one closing round, so that no member's next call overwrites its
        // header before every peer has read it, then this member's signals delivered (over TCP
        // they need its progress) and the error.
        c.notify_all(kDone);
        for (int d = 1; d < n; ++d)
          co_await c.await(c.peer(-d), kDone);
        c.complete_fetches();
        hand_off->throw_in_place_mismatch(unlike);
      }
      if (hand_off->everyone_reads()) {  // allreduce_twophase_read.h: the whole message, here
        read_parts = true;
        if (!reduce_part_by_reading(c, a, *hand_off)) hand_off->say_part_missing();
        break;
      }
      streamed = hand_off->everyone_streams();
      if (streamed) g_streamed_calls.fetch_add(1, std::memory_order_relaxed);
      if (hand_off->anyone_reads()) {  // a second round, once the offering members staged
        if (offering) stage_for_peers(c, s);
        c.notify_all(kReady);
        for (int d = 1; d < n; ++d)
          co_await c.await(c.peer(-d), kReady);
      }
    }
    // Reduce-scatter: only this member reads its own part of every input, so writing the
    // result into dst's part is safe even in place.
    const Segment mine = partition(s.count, n, c.rank());
    if (hand_off && !streamed) {  // part_hand_off.h
      reduce_part(c, s, mine, false, PartGoes::kToRecvOnly);
      hand_off->give(s, index);
      c.notify_all(kReady2);  // my part is in your recv (or your window); I have read your input
      for (int d = 1; d < n; ++d)
        co_await c.await(c.peer(-d), kReady2);
      hand_off->take(s, index);
      continue;
    }
    if (mine.count > 0)
      reduce_part(c, s, mine, false,
                  streamed ? PartGoes::kToWindowAndStreamed : PartGoes::kToWindow);
    c.notify_all(kReady2);
    for (int d = 1; d < n; ++d)
      co_await c.await(c.peer(-d), kReady2);
    gather_parts(c, s, streamed);  // owners have finished reading our input (kReady2)
  }
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  if (hand_off) hand_off->finish();
  if (read_parts) throw_if_part_missing(c, *hand_off);
}

}  // namespace rankflow::coll
