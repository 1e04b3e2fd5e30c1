// allreduce over rings: reduce-scatter then allgather around a ring, each member reading from
// its upstream neighbour. One ring (`ring`), two half-rings in opposite directions
// (`bidirectional_ring`), or two rings over interleaved chunks (`ibing`, after Zong et al.,
// ACM TACO 2025). Correct for every member count and element count: the reference ibing
// overwrote peer chunks beyond two ranks; here every overwrite waits for the downstream
// neighbour's credit for the read it could race with.
//
// Per lane and member, with left = upstream, right = downstream, chunk indices mod P:
//   start:        dst = src; ready -> right
//   RS step s:    wait ready(left); dst[c] op= left.dst[c], c = me - dir(s+1); credit -> left;
//                 ready -> right
//   AG step s:    wait credit(right) (it has read our chunk c in RS); wait ready(left);
//                 dst[c] = left.dst[c], c = me - dir*s; credit -> left; ready -> right (s < P-2)
//   end:          wait the remaining P-1 credits from right (nobody still reads our dst).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// Each lane's own signals: "chunk ready" downstream, "chunk consumed" (credit) upstream.
const SignalKind kForward("ring.forward");
const SignalKind kForwardCredit("ring.forward_credit");
const SignalKind kBackward("ring.backward");
const SignalKind kBackwardCredit("ring.backward_credit");

struct Lane {
  int dir;  // +1: read from rank-1; -1: read from rank+1
  const SignalKind* ready;
  const SignalKind* credit;
  std::vector<Segment> chunks;  // P chunks, in elements
};

int mod(int value, int n) {
  return ((value % n) + n) % n;
}

CollTask run_lanes(CollContext& c, AllreduceArgs a, std::vector<Lane> lanes) {
  const Reducer& r = *a.reducer;
  const size_t es = r.elem_size;
  if (a.src != a.dst) std::memmove(c.local(a.dst), c.local(a.src), a.count * es);
  const int n = c.size();
  if (n == 1 || a.count == 0) co_return;
  for (const Lane& lane : lanes)
    c.notify(c.peer(lane.dir), *lane.ready);
  // Reduce-scatter: fold the upstream neighbour's partial chunk into ours.
  for (int s = 0; s < n - 1; ++s) {
    for (const Lane& lane : lanes) {
      const int left = c.peer(-lane.dir);
      const Segment chunk = lane.chunks[mod(c.rank() - lane.dir * (s + 1), n)];
      co_await c.await(left, *lane.ready);
      if (chunk.count > 0) {
        const size_t offset = a.dst + chunk.begin * es;
        std::byte* fallback = c.scratch2(chunk.count * es);
        r.combine(c.local(offset), c.read(left, offset, chunk.count * es, fallback), chunk.count);
      }
      c.notify(left, *lane.credit);
      c.notify(c.peer(lane.dir), *lane.ready);
    }
  }
  // Allgather: copy each finished chunk from upstream, once downstream has read ours.
  for (int s = 0; s < n - 1; ++s) {
    for (const Lane& lane : lanes) {
      const int left = c.peer(-lane.dir);
      const Segment chunk = lane.chunks[mod(c.rank() - lane.dir * s, n)];
      co_await c.await(c.peer(lane.dir), *lane.credit);
      co_await c.await(left, *lane.ready);
      if (chunk.count > 0) {
        const size_t offset = a.dst + chunk.begin * es;
        c.fetch(left, offset, c.local(offset), chunk.count * es);
        c.complete_fetches();
      }
      c.notify(left, *lane.credit);
      if (s < n - 2) c.notify(c.peer(lane.dir), *lane.ready);
    }
  }
  // Nobody may still be reading our dst when we return.
  for (const Lane& lane : lanes) {
    for (int i = 0; i < n - 1; ++i)
      co_await c.await(c.peer(lane.dir), *lane.credit);
  }
}

// The P chunks of elements [first, first + count).
std::vector<Segment> contiguous_chunks(size_t first, size_t count, int n) {
  std::vector<Segment> chunks;
  for (int i = 0; i < n; ++i) {
    Segment s = partition(count, n, i);
    chunks.push_back({first + s.begin, s.count});
  }
  return chunks;
}

}  // namespace

CollTask allreduce_ring(CollContext& c, AllreduceArgs a) {
  return run_lanes(c, a,
                   {{+1, &kForward, &kForwardCredit, contiguous_chunks(0, a.count, c.size())}});
}

CollTask allreduce_bidirectional_ring(CollContext& c, AllreduceArgs a) {
  const size_t half = a.count / 2;
  return run_lanes(
      c, a,
      {{+1, &kForward, &kForwardCredit, contiguous_chunks(0, half, c.size())},
       {-1, &kBackward, &kBackwardCredit, contiguous_chunks(half, a.count - half, c.size())}});
}

CollTask allreduce_ibing(CollContext& c, AllreduceArgs a) {
  // 2P interleaved chunks: even ones travel forward, odd ones backward.
  const int n = c.size();
  Lane forward{+1, &kForward, &kForwardCredit, {}};
  Lane backward{-1, &kBackward, &kBackwardCredit, {}};
  for (int i = 0; i < 2 * n; ++i) {
    (i % 2 == 0 ? forward : backward).chunks.push_back(partition(a.count, 2 * n, i));
  }
  return run_lanes(c, a, {forward, backward});
}

}  // namespace rankflow::coll
