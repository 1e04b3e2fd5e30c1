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

// A broadcast's chunk: 16 KiB, or 1/256 of the message when that is larger. The root stages
// chunk k + 1 while the peer copies chunk k out, so the staged lines move between the two
// cores' caches while hot; on the Intel Xeon of 2026-12-03 (2 MiB L2) 16 KiB chunks beat 64 KiB
// ones by x1.05-1.2 at 256 KiB-1 MiB and tied from 2 MiB (bench/micro BM_StagingHandoff's
// shape and rankflow-bench, docs/performance.md).
inline constexpr size_t kMinBroadcastChunk = 16 * 1024;
inline constexpr size_t kMaxBroadcastChunks = 256;
inline size_t broadcast_chunk_bytes(size_t bytes) {
  return std::max(kMinBroadcastChunk, (bytes + kMaxBroadcastChunks - 1) / kMaxBroadcastChunks);
}

}  // namespace rankflow::coll
