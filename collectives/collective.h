// The algorithm interface. Every collective runs on a CollContext with its buffers already in
// the team's symmetric window (the same offsets on every member); src == dst means in place.
// Counts are in elements. Algorithms call only CollContext/Team primitives.
#pragma once

#include <cstddef>

#include "collectives/coll_context.h"
#include "collectives/reduce.h"

namespace rankflow::coll {

struct AllreduceArgs {
  size_t src;
  size_t dst;
  size_t count;
  const Reducer* reducer;
};

// Allreduce algorithms (one file each).
void allreduce_onephase(CollContext& c, const AllreduceArgs& a);
void allreduce_twophase(CollContext& c, const AllreduceArgs& a);
void allreduce_ring(CollContext& c, const AllreduceArgs& a);
void allreduce_bidirectional_ring(CollContext& c, const AllreduceArgs& a);
void allreduce_ibing(CollContext& c, const AllreduceArgs& a);

// src: `count` elements of this rank; dst: size() * count elements, rank r's block at r * count.
// In place when src == dst + rank * count * elem_size.
void allgather_mesh(CollContext& c, size_t src, size_t dst, size_t count, size_t elem_size);
// src: size() * count elements; dst: this rank's reduced block of `count` elements.
void reduce_scatter_mesh(CollContext& c, size_t src, size_t dst, size_t count,
                         const Reducer& reducer);
// buffer: `bytes` at the same offset everywhere; root's contents end up on every member.
void broadcast_direct(CollContext& c, size_t buffer, size_t bytes, int root);
// src and dst: size() blocks of `block_bytes`; block p of src goes to member p's block `rank`.
void all_to_all_mesh(CollContext& c, size_t src, size_t dst, size_t block_bytes);

}  // namespace rankflow::coll
