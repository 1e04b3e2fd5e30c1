// reduce_scatter, mesh: member r reduces block r of every input, in rank order, accumulating
// f16/bf16 in f32.
//
// Symmetric memory: every member reads its block of each peer's input in place; the result is
// written after the "done" round, so dst may overlap src. The caller's plain memory (src_ptr and
// dst_ptr): each member stages only the blocks its peers reduce, reduces its own block straight
// from the caller's input with the peers' staged blocks, in one pass where it can, into the
// caller's recv, and waits in the "done" round until its peers have read what it staged.
#include <cstring>

#include "collectives/collective.h"

namespace rankflow::coll {
namespace {

// The caller's memory. recv may be the start of send (in place): this member's own block is
// read from send before anything is written there, and the other blocks of send are staged
// before the "ready" round.
CollTask reduce_scatter_plain(CollContext& c, size_t src, size_t count, const Reducer& r,
                              const std::byte* send, std::byte* recv) {
  const size_t block = count * r.elem_size;
  const int me = c.rank();
  for (int p = 0; p < c.size(); ++p) {
    const size_t at = static_cast<size_t>(p) * block;
    if (p != me) std::memcpy(c.local(src + at), send + at, block);
  }
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  const size_t mine = src + static_cast<size_t>(me) * block;
  const std::byte* own = send + static_cast<size_t>(me) * block;
  std::byte* fallback = c.scratch2(block);
  auto input = [&](int p) { return p == me ? own : c.read(p, mine, block, fallback); };
  if (c.size() == 2 && r.acc_size == r.elem_size) {
    r.reduce2(recv, input(0), input(1), count);  // element-wise safe when recv is own
  } else {
    std::byte* acc = c.scratch(count * r.acc_size);
    accumulate_inputs(r, acc, count, c.size(), input);
    r.store(recv, acc, count);
  }
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
}

// Symmetric memory, or an input staged whole when the call started (non-blocking calls): peers
// read their blocks in place, so the result goes out only after the "done" round (dst may
// overlap src).
CollTask reduce_scatter_in_window(CollContext& c, size_t src, size_t dst, size_t count,
                                  const Reducer& r, std::byte* dst_ptr) {
  const size_t block = count * r.elem_size;
  const size_t mine = src + static_cast<size_t>(c.rank()) * block;
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
  r.store(dst_ptr ? dst_ptr : c.local(dst), acc, count);
}

}  // namespace

CollTask reduce_scatter_mesh(CollContext& c, size_t src, size_t dst, size_t count, const Reducer& r,
                             const std::byte* src_ptr, std::byte* dst_ptr) {
  const size_t block = count * r.elem_size;
  if (count == 0) return CollTask::finished();
  const size_t mine = static_cast<size_t>(c.rank()) * block;
  if (c.size() == 1) {
    const std::byte* in = src_ptr ? src_ptr + mine : c.local(src + mine);
    std::byte* out = dst_ptr ? dst_ptr : c.local(dst);
    if (in != out) std::memmove(out, in, block);
    return CollTask::finished();
  }
  if (src_ptr != nullptr) return reduce_scatter_plain(c, src, count, r, src_ptr, dst_ptr);
  return reduce_scatter_in_window(c, src, dst, count, r, dst_ptr);
}

}  // namespace rankflow::coll
