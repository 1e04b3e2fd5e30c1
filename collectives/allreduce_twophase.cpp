// allreduce, two phases: reduce-scatter (member r reduces part r of every input, in rank order)
// then allgather (every member copies each reduced part from its owner). Three rounds of
// signals; each member reads 2(P-1)/P of the message instead of (P-1), so it wins for large
// messages on more than two ranks. Parts need not be equal: any count works.
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask allreduce_twophase(CollContext& c, AllreduceArgs a) {
  const Reducer& r = *a.reducer;
  const size_t es = r.elem_size;
  if (c.size() == 1 || a.count == 0) {
    if (a.src != a.dst) std::memmove(c.local(a.dst), c.local(a.src), a.count * es);
    co_return;
  }
  const int me = c.rank();
  const int n = c.size();
  c.notify_all(Purpose::kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kReady);

  // Reduce-scatter: only this member reads its own part of every input, so writing the result
  // into dst's part is safe even in place.
  const Segment mine = partition(a.count, n, me);
  if (mine.count > 0) {
    std::byte* acc = c.scratch(mine.count * r.acc_size);
    std::byte* fallback = c.scratch2(mine.count * es);
    for (int p = 0; p < n; ++p) {
      const std::byte* in = c.read(p, a.src + mine.begin * es, mine.count * es, fallback);
      if (p == 0) {
        r.load(acc, in, mine.count);
      } else {
        r.accumulate(acc, in, mine.count);
      }
    }
    r.store(c.local(a.dst + mine.begin * es), acc, mine.count);
  }
  c.notify_all(Purpose::kReady2);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kReady2);

  // Allgather: each part from its owner. Owners have finished reading our input (kReady2).
  for (int d = 1; d < n; ++d) {
    const int p = c.peer(d);
    const Segment part = partition(a.count, n, p);
    if (part.count == 0) continue;
    const size_t offset = a.dst + part.begin * es;
    c.fetch(p, offset, c.local(offset), part.count * es);
  }
  c.complete_fetches();
  c.notify_all(Purpose::kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), Purpose::kDone);
}

}  // namespace rankflow::coll
