// allreduce, one phase: every member sees every input and reduces locally, in rank order (so
// all members get bit-identical results).
//
// Small messages (up to the inbox's slot: 32 KiB on up to 4 members, else 4 KiB) are pushed
// (reduce_pushed.cpp): each member stores its input and then a sequence flag into a slot of every
// peer's inbox (flag and data share a cache line for up to 56 bytes), waits for every peer's flag,
// and reduces. One round, no "done" round: slots alternate by sequence parity, and a member can
// only reuse a slot after every peer has moved on to a later collective, which means it has read
// the slot. src and dst may be any memory. Larger messages are read in place from peers'
// windows, in cache-sized blocks, between a "ready" and a "done" round.
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

namespace {

constexpr size_t kOnephaseReduceBlockBytes = 64 * 1024;

CollTask read_in_place(CollContext& c, AllreduceArgs a) {
  const Reducer& r = *a.reducer;
  for (int d = 1; d < c.size(); ++d)
    c.notify(c.peer(d), kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  // Peers read our input until they say done, so in place (or with an f32 accumulator) the
  // result is built in scratch and written out at the end.
  // The result goes to a.dst_ptr (the caller's memory) when given, else to dst in the window.
  std::byte* out = a.dst_ptr ? a.dst_ptr : c.local(a.dst);
  const bool direct_into_dst =
      (a.dst_ptr != nullptr || a.src != a.dst) && r.acc_size == r.elem_size;
  const size_t block = std::max<size_t>(1, kOnephaseReduceBlockBytes / r.acc_size);
  std::byte* acc_all = direct_into_dst ? out : c.scratch(a.count * r.acc_size);
  // Room to fetch two blocks where peers are not mapped (both inputs of the fused pair pass).
  const size_t block_bytes = std::min(a.count, block) * r.elem_size;
  std::byte* fallback = c.scratch2(2 * block_bytes);
  // Two members out of place: one fused pass per block straight into dst.
  std::byte* pair_out = c.size() == 2 && direct_into_dst ? out : nullptr;
  for (size_t first = 0; first < a.count; first += block) {
    const size_t n = std::min(block, a.count - first);
    if (pair_out != nullptr) {
      const std::byte* in0 = c.read(0, a.src + first * r.elem_size, n * r.elem_size, fallback);
      const std::byte* in1 =
          c.read(1, a.src + first * r.elem_size, n * r.elem_size, fallback + block_bytes);
      r.reduce2(pair_out + first * r.elem_size, in0, in1, n);
      continue;
    }
    accumulate_inputs(r, acc_all + first * r.acc_size, n, c.size(), [&](int p) {
      return c.read(p, a.src + first * r.elem_size, n * r.elem_size, fallback);
    });
  }
  for (int d = 1; d < c.size(); ++d)
    c.notify(c.peer(d), kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  if (!direct_into_dst) r.store(out, acc_all, a.count);
}

}  // namespace

bool onephase_pushes(const CollContext& c, size_t bytes) {
  return c.has_inbox() && c.size() > 1 && bytes <= c.inbox().payload_bytes();
}

CollTask allreduce_onephase(CollContext& c, const AllreduceArgs& a) {
  const size_t bytes = a.count * a.reducer->elem_size;
  const std::byte* src = a.src_ptr ? a.src_ptr : c.local(a.src);
  std::byte* dst = a.dst_ptr ? a.dst_ptr : c.local(a.dst);
  if (c.size() == 1 || a.count == 0) {
    if (src != dst) std::memmove(dst, src, bytes);
    return CollTask::finished();
  }
  if (onephase_pushes(c, bytes)) return allreduce_pushed(c, src, dst, a.count, *a.reducer);
  return read_in_place(c, a);
}

}  // namespace rankflow::coll
