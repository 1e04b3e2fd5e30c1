// allreduce, one phase: every member reads every peer's input and reduces locally, in rank
// order (so all members get bit-identical results), in cache-sized blocks. One "ready" round,
// one "done" round. Best for small messages and for 2 ranks, where it moves the fewest bytes
// per synchronisation.
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

namespace {
constexpr size_t kBlockBytes = 64 * 1024;
}

CollTask allreduce_onephase(CollContext& c, AllreduceArgs a) {
  const Reducer& r = *a.reducer;
  const size_t bytes = a.count * r.elem_size;
  if (c.size() == 1 || a.count == 0) {
    if (a.src != a.dst) std::memmove(c.local(a.dst), c.local(a.src), bytes);
    co_return;
  }
  c.notify_all(Purpose::kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kReady);
  // Peers read our input until they say done, so in place (or with an f32 accumulator) the
  // result is built in scratch and written out at the end.
  const bool direct_into_dst = a.src != a.dst && r.acc_size == r.elem_size;
  const size_t block = std::max<size_t>(1, kBlockBytes / r.acc_size);
  std::byte* acc_all = direct_into_dst ? c.local(a.dst) : c.scratch(a.count * r.acc_size);
  std::byte* fallback = c.scratch2(std::min(a.count, block) * r.elem_size);
  for (size_t first = 0; first < a.count; first += block) {
    const size_t n = std::min(block, a.count - first);
    std::byte* acc = acc_all + first * r.acc_size;
    for (int p = 0; p < c.size(); ++p) {
      const std::byte* in = c.read(p, a.src + first * r.elem_size, n * r.elem_size, fallback);
      if (p == 0) {
        r.load(acc, in, n);
      } else {
        r.accumulate(acc, in, n);
      }
    }
  }
  c.notify_all(Purpose::kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kDone);
  if (!direct_into_dst) r.store(c.local(a.dst), acc_all, a.count);
}

}  // namespace rankflow::coll
