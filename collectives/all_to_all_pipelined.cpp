// all_to_all, pipelined: the mesh on the caller's own memory, with the staging overlapped with
// the peers' reads. Each member stages only the blocks its peers read (block p of its input for
// member p), chunk by chunk (pipeline_chunks.h), saying "ready" per chunk, and copies its own
// block straight from its input into its result. Before fetching chunk k of what each peer
// staged for it, it stages its own chunk k + 1, so the peers' reads overlap its staging. One
// "done" round at the end. Without a source to stage (symmetric memory, or a non-blocking call
// that staged it all at the start) it is the mesh. (The `cross_memory` entry,
// exchange_cross_memory.cpp, copies plain blocks straight between the processes instead.)
#include <algorithm>
#include <cstring>

#include "collectives/collective.h"
#include "collectives/pipeline_chunks.h"
#include "collectives/stage_copy.h"

namespace rankflow::coll {

CollTask all_to_all_pipelined(CollContext& c, size_t src, size_t dst, size_t block,
                              const std::byte* send, std::byte* out, bool stream_staging) {
  if (block == 0) return CollTask::finished();
  if (send == nullptr || out == nullptr) {
    return all_to_all_mesh(c, src, dst, block, out);
  }
  return all_to_all_pipelined_staged(c, src, block, send, out, stream_staging);
}

CollTask all_to_all_pipelined_staged(CollContext& c, size_t src, size_t block,
                                     const std::byte* send, std::byte* out, bool stream_staging) {
  const size_t me = static_cast<size_t>(c.rank());
  const size_t chunk = pipeline_chunk_bytes(block);
  size_t staged = 0;
  auto stage_next = [&] {
    const size_t length = std::min(chunk, block - staged);
    for (int d = 1; d < c.size(); ++d) {
      const size_t at = static_cast<size_t>(c.peer(d)) * block + staged;
      stage_copy(c.local(src + at), send + at, length, stream_staging);
    }
    staged += length;
    c.notify_all(kReady);
  };
  stage_next();
  if (out + me * block != send + me * block) {
    std::memmove(out + me * block, send + me * block, block);
  }
  for (size_t first = 0; first < block; first += chunk) {
    if (staged < block) stage_next();
    const size_t length = std::min(chunk, block - first);
    for (int d = 1; d < c.size(); ++d) {
      const int p = c.peer(d);
      co_await c.await(p, kReady);
      c.fetch(p, src + me * block + first, out + static_cast<size_t>(p) * block + first, length);
    }
  }
  c.complete_fetches();
  c.notify_all(kDone);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
}

}  // namespace rankflow::coll
