// reduce_scatter, mesh: member r reduces block r of every input, in rank order, accumulating
// f16/bf16 in f32. The result is written after the "done" round, so dst may overlap src.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {

CollTask reduce_scatter_mesh(CollContext& c, size_t src, size_t dst, size_t count,
                             const Reducer& r) {
  const size_t block = count * r.elem_size;
  if (count == 0) co_return;
  const size_t mine = src + static_cast<size_t>(c.rank()) * block;
  if (c.size() == 1) {
    if (mine != dst) std::memmove(c.local(dst), c.local(mine), block);
    co_return;
  }
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  std::byte* acc = c.scratch(count * r.acc_size);
  std::byte* fallback = c.scratch2(block);
  accumulate_inputs(r, acc, count, c.size(),
                    [&](int p) { return c.read(p, mine, block, fallback); });
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  r.store(c.local(dst), acc, count);
}

}  // namespace rankflow::coll
