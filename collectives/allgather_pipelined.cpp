// allgather, pipelined: the mesh on the caller's own memory, with the staging overlapped with
// the peers' reads. Each member copies its input into its window chunk by chunk
// (pipeline_chunks.h), says "ready" per chunk and copies the chunk into its own block of the
// result while the chunk is in cache; before each of its peers' chunks it stages its own next
// one. So a peer fetches chunk k while its owner stages chunk k + 1, instead of waiting for the
// whole block to be staged, and every copy reads lines a core has just written. One "done"
// round at the end (nobody reads my window any more). Without a source to stage (symmetric
// memory, or a non-blocking call that staged it all at the start) it is the mesh. (The
// `cross_memory` entry, exchange_cross_memory.cpp, copies plain blocks straight between the
// processes instead of staging them.)
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"
#include "collectives/pipeline_chunks.h"
#include "collectives/stage_copy.h"

namespace rankflow::coll {

CollTask allgather_pipelined(CollContext& c, size_t src, size_t dst, size_t block, size_t elem_size,
                             const std::byte* send, std::byte* out, bool stream_staging) {
  if (block == 0) return CollTask::finished();
  if (send == nullptr || out == nullptr) {
    return allgather_mesh(c, src, dst, block / elem_size, elem_size, out);
  }
  return allgather_pipelined_staged(c, src, block, send, out, stream_staging);
}

CollTask allgather_pipelined_staged(CollContext& c, size_t src, size_t block, const std::byte* send,
                                    std::byte* out, bool stream_staging) {
  const size_t chunk = pipeline_chunk_bytes(block);
  std::byte* mine = out + static_cast<size_t>(c.rank()) * block;
  size_t staged = 0;
  auto stage_next = [&] {
    const size_t length = std::min(chunk, block - staged);
    stage_copy(c.local(src + staged), send + staged, length, stream_staging);
    if (mine != send) std::memcpy(mine + staged, send + staged, length);
    staged += length;
    c.notify_all(kReady);
  };
  stage_next();
  for (size_t first = 0; first < block; first += chunk) {
    if (staged < block) stage_next();
    const size_t length = std::min(chunk, block - first);
    for (int d = 1; d < c.size(); ++d) {
      const int p = c.peer(d);
      co_await c.await(p, kReady);
      c.fetch(p, src + first, out + static_cast<size_t>(p) * block + first, length);
    }
  }
  c.complete_fetches();
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
}

}  // namespace rankflow::coll
