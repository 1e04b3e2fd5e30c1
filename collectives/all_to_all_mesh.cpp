// all_to_all, mesh: member r copies block r of every peer's input into its block p. With
// `out_ptr` (the caller's own memory, the input staged at src) they go straight there. In place
// (src == dst) where every member maps every other's window (CollContext::eager, the same
// answer on every member), each pair of members swaps its two blocks where they lie (member
// r's block p with member p's block r), the lower rank the first half and the higher the rest,
// so nothing is staged and the own block is not touched (a call in place on some members only
// may then overwrite a peer's input: in place is on every member or none); elsewhere in place the
// blocks are gathered in scratch and written after the "done" round. Runs on the thread that drives
// the collective.
#include <algorithm>
#include <cstring>
#include <string>

#include "collectives/collective.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

// Swaps `bytes` at `a` and `b` through a buffer that stays in L1.
void swap_bytes(std::byte* a, std::byte* b, size_t bytes) {
  alignas(64) std::byte held[4096];
  for (size_t at = 0; at < bytes; at += sizeof held) {
    const size_t length = std::min(sizeof held, bytes - at);
    std::memcpy(held, a + at, length);
    std::memcpy(a + at, b + at, length);
    std::memcpy(b + at, held, length);
  }
}

// This member's share of the swap with each peer: of the pair (this member's block p, peer
// p's block for this member), the lower rank swaps the first half (cut at a multiple of 64
// bytes from the block's start) and the higher rank the rest. Every peer's window is mapped
// here (the caller checked CollContext::eager, which every member agreed on).
void swap_shares_with_peers(CollContext& c, size_t buffer, size_t block_bytes) {
  const size_t me = static_cast<size_t>(c.rank());
  const size_t half = block_bytes / 2 / 64 * 64;
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    const size_t begin = c.rank() < p ? 0 : half;
    const size_t end = c.rank() < p ? half : block_bytes;
    if (begin == end) continue;
    const size_t theirs_at = buffer + me * block_bytes;
    c.team().remote_ptr(p, theirs_at + block_bytes);  // bounds check of the whole block
    auto* theirs = static_cast<std::byte*>(c.team().remote_ptr(p, theirs_at));
    if (theirs == nullptr) {
      throw InvalidState("all_to_all in place: rank " + std::to_string(c.rank()) +
                         " does not map the window of member " + std::to_string(p) +
                         ", which every member agreed it would");
    }
    std::byte* mine = c.local(buffer + static_cast<size_t>(p) * block_bytes);
    swap_bytes(mine + begin, theirs + begin, end - begin);
  }
}

}  // namespace

CollTask all_to_all_mesh(CollContext& c, size_t src, size_t dst, size_t block_bytes,
                         std::byte* out_ptr) {
  const int n = c.size();
  const size_t me = static_cast<size_t>(c.rank());
  if (block_bytes == 0) co_return;
  const bool in_place = src == dst && out_ptr == nullptr;
  if (n == 1) {
    std::byte* out = out_ptr != nullptr ? out_ptr : c.local(dst);
    if (out != c.local(src)) std::memmove(out, c.local(src), block_bytes);
    co_return;
  }
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kReady);
  const bool swaps = in_place && c.eager();
  std::byte* staging = in_place && !swaps ? c.scratch(block_bytes * n) : nullptr;
  if (swaps) {
    swap_shares_with_peers(c, dst, block_bytes);
  } else {
    for (int p = 0; p < n; ++p) {
      std::byte* out = out_ptr != nullptr ? out_ptr + p * block_bytes
                       : in_place         ? staging + p * block_bytes
                                          : c.local(dst + p * block_bytes);
      c.fetch(p, src + me * block_bytes, out, block_bytes);
    }
    c.complete_fetches();
  }
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  if (staging != nullptr) std::memcpy(c.local(dst), staging, block_bytes * n);
}

}  // namespace rankflow::coll
