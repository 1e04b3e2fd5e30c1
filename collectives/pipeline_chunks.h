// pipeline_chunks: how the algorithms that stage a caller's plain buffer while their peers fetch
// it (broadcast_direct, allgather_pipelined, all_to_all_pipelined) cut a message into chunks:
// large enough that a "ready" signal per chunk costs little, small enough that a peer starts
// fetching soon and reads what was just staged while it is still in the stager's cache. Pure;
// any thread.
#pragma once

#include <algorithm>
#include <cstddef>

namespace rankflow::coll {

inline constexpr size_t kMinPipelineChunk = 64 * 1024;
inline constexpr size_t kMaxPipelineChunks = 16;

// The chunk for a message of `bytes`: 64 KiB, or 1/16 of the message when that is larger.
inline size_t pipeline_chunk_bytes(size_t bytes) {
  return std::max(kMinPipelineChunk, (bytes + kMaxPipelineChunks - 1) / kMaxPipelineChunks);
}

}  // namespace rankflow::coll
