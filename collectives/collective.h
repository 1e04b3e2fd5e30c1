// The algorithm interface. Every collective runs on a CollContext with its buffers already in
// the team's symmetric window (the same offsets on every member); src == dst means in place.
// Counts are in elements. Algorithms call only CollContext/Team primitives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/coll_context.h"
#include "collectives/reduce.h"

namespace rankflow::coll {

// How twophase splits an allreduce on the caller's plain memory (allreduce_twophase.cpp):
// messages up to `segmented_up_to` bytes go in segments of at least kMinBytes, at most
// `max_segments` a call (above the tables' 4 MiB only where the segments come out equal);
// larger ones go whole. Every member must split alike: the machine
// profile the members agreed on sets it (MachineProfile::twophase); the default is the tables'.
//
// From `reads_from` bytes, on two members, each member offers to read its part of the peer's
// input with one kernel copy instead of having it staged (allreduce_twophase_read.h); the call
// then goes whole. The default never offers.
//
// From `streams_from` bytes, on two members that map each other's windows, a call in segments
// neither reads nor hands off: it stages, and each member stores its reduced part and copies
// its peer's part out of the peer's window into recv with non-temporal stores (a recv that
// large is not in cache, and an ordinary store first fetches each line). The default never
// streams.
struct TwophaseSegments {
  static constexpr size_t kMinBytes = size_t{1} << 20;
  size_t segmented_up_to = size_t{4} << 20;
  size_t max_segments = 4;
  size_t reads_from = SIZE_MAX;
  size_t streams_from = SIZE_MAX;
};
// How many plain twophase calls of this process streamed their parts (every member offered:
// TwophaseSegments::streams_from), for tests.
uint64_t twophase_streamed_calls();
// Elements per segment of a plain twophase allreduce of `count` elements of `elem_size` bytes
// (`count` itself where the call goes whole).
size_t twophase_segment_elements(size_t count, size_t elem_size, const TwophaseSegments& split);

struct AllreduceArgs {
  size_t src;  // window offsets (algorithms that read peers' buffers use these)
  size_t dst;
  size_t count;
  const Reducer* reducer;
  // Local addresses of the caller's own buffers when they are not in the window: the pushed
  // onephase path reads src_ptr; twophase reads its own part from src_ptr and copies only the
  // parts peers read into the window at src; onephase and twophase write their result to
  // dst_ptr directly (dst in the window is then scratch that peers may read).
  const std::byte* src_ptr = nullptr;
  std::byte* dst_ptr = nullptr;
  TwophaseSegments segments{};  // plain twophase only
};

// Both of a call's buffers the caller's own memory (src_ptr and dst_ptr set) and apart: a plain
// call out of place.
inline bool plain_and_apart(const AllreduceArgs& a) {
  if (a.src_ptr == nullptr || a.dst_ptr == nullptr) return false;
  const size_t bytes = a.count * a.reducer->elem_size;
  return a.src_ptr + bytes <= a.dst_ptr || a.dst_ptr + bytes <= a.src_ptr;
}

// True when onephase pushes the message through the low-latency inbox (flag and data in one
// message, one round, any local memory for src and dst).
bool onephase_pushes(const CollContext& c, size_t bytes);

// Allreduce algorithms (one file each). The coroutines take their arguments by value: they live
// in the coroutine frame while the task is suspended. onephase is not one (it returns the pushed
// or the in-place task), so it takes a reference: a small pushed call copies nothing on the way.
CollTask allreduce_onephase(CollContext& c, const AllreduceArgs& a);
CollTask allreduce_twophase(CollContext& c, AllreduceArgs a);
CollTask allreduce_ring(CollContext& c, AllreduceArgs a);
CollTask allreduce_bidirectional_ring(CollContext& c, AllreduceArgs a);
CollTask allreduce_ibing(CollContext& c, AllreduceArgs a);

// src: `count` elements of this rank; dst: size() * count elements, rank r's block at r * count.
// In place when src == dst + rank * count * elem_size.
// With `out` (the caller's memory; null for symmetric memory) the result goes straight there.
CollTask allgather_mesh(CollContext& c, size_t src, size_t dst, size_t count, size_t elem_size,
                        std::byte* out = nullptr);
// src: size() * count elements; dst: this rank's reduced block of `count` elements. With
// `src_ptr` (the caller's plain memory; null for symmetric memory or an input staged already),
// which needs `dst_ptr`, it stages only the blocks peers reduce and writes the result straight
// into dst_ptr (which may be src_ptr). With only `dst_ptr`, the result goes there.
CollTask reduce_scatter_mesh(CollContext& c, size_t src, size_t dst, size_t count,
                             const Reducer& reducer, const std::byte* src_ptr = nullptr,
                             std::byte* dst_ptr = nullptr);
// buffer: `bytes` at the same offset everywhere; root's contents end up on every member.
// With `out` (plain memory) the root stages its caller's buffer `stage_from` chunk by chunk
// while members fetch (null: staged before the call), with non-temporal stores when
// `stream_staging` (stage_copy.h).
CollTask broadcast_direct(CollContext& c, size_t buffer, size_t bytes, int root,
                          std::byte* out = nullptr, const std::byte* stage_from = nullptr,
                          bool stream_staging = false);
// broadcast, staged: broadcast_direct's chunks through the root's window at every size and on
// any host, never the kernel's copy between the processes (where a system call costs more than
// the second copy: the AMD Zen 5 profile's 32-512 KiB).
CollTask broadcast_staged(CollContext& c, size_t buffer, size_t bytes, int root, std::byte* out,
                          const std::byte* stage_from, bool stream_staging);
// Plain buffers, from 32 KiB on two members (called by broadcast_direct): each peer reads most of
// the message from the root's buffer and the root writes the rest into each peer's, one kernel
// copy each; peers it cannot reach so fetch from its window (broadcast_cross_memory.cpp).
CollTask broadcast_cross_memory(CollContext& c, size_t buffer, size_t bytes, int root,
                                std::byte* out, const std::byte* stage_from);
// src and dst: size() blocks of `block_bytes`; block p of src goes to member p's block `rank`.
CollTask all_to_all_mesh(CollContext& c, size_t src, size_t dst, size_t block_bytes,
                         std::byte* out_ptr = nullptr);

// The mesh on the caller's own memory, staging `send` chunk by chunk while the peers fetch
// (allgather_pipelined.cpp, all_to_all_pipelined.cpp): `out` is the caller's result, `send` its
// input, staged at src with non-temporal stores when `stream_staging`. With a null `send` or
// `out` (symmetric memory, or an input staged before the call) they run the mesh. `send` and
// `out` do not overlap, or only exactly in place (as MPI's aliasing rule has it).
CollTask allgather_pipelined(CollContext& c, size_t src, size_t dst, size_t block, size_t elem_size,
                             const std::byte* send, std::byte* out, bool stream_staging);
CollTask allgather_pipelined_staged(CollContext& c, size_t src, size_t block, const std::byte* send,
                                    std::byte* out, bool stream_staging);
CollTask all_to_all_pipelined(CollContext& c, size_t src, size_t dst, size_t block,
                              const std::byte* send, std::byte* out, bool stream_staging);
CollTask all_to_all_pipelined_staged(CollContext& c, size_t src, size_t block,
                                     const std::byte* send, std::byte* out, bool stream_staging);

// allgather and all_to_all, cross-memory (exchange_choice.cpp, exchange_cross_memory.cpp): each
// block moves straight from the sender's send into the receiver's recv, one kernel copy each
// (written by the sender, or read by the receiver where both members of the pair offer to read),
// or into the receiver's window where it cannot (another host, the kernel refuses, an in-place
// all_to_all). With `follow_verdict` (the `probed` entries), a blocking call stages its blocks
// as the pipelined ones do instead where member 0's last probe said stage (LinkProbe::Verdict),
// the same on every member. Arguments as for the pipelined ones; with a null `out` (symmetric
// memory), or blocks too small for the exchange's header, they run the pipelined ones.
CollTask allgather_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                size_t elem_size, const std::byte* send, std::byte* out,
                                bool stream_staging, bool follow_verdict);
CollTask all_to_all_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                 const std::byte* send, std::byte* out, bool stream_staging,
                                 bool follow_verdict);
// The own blocks the cross-memory exchanges of this process copied with non-temporal stores
// (MachineProfile::stream_own_block), for tests.
uint64_t own_blocks_streamed();

// Small blocks through the low-latency inbox, one round, any local memory (see the files):
// true when blocks of `block_bytes` fit a slot.
bool pushes_blocks(const CollContext& c, size_t block_bytes);
CollTask allgather_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                          size_t block_bytes);
CollTask all_to_all_pushed(CollContext& c, const std::byte* send, std::byte* recv,
                           size_t block_bytes);
// Small broadcasts stream (any number of members, see broadcast_streamed.cpp); up to the
// inbox's slot they push on two members (see broadcast_pushed.cpp).
bool broadcast_streams(const CollContext& c, size_t bytes);
CollTask broadcast_streamed(CollContext& c, std::byte* buffer, size_t bytes, int root);
bool broadcast_pushes(const CollContext& c, size_t bytes);
CollTask broadcast_pushed(CollContext& c, std::byte* buffer, size_t bytes, int root);
// Reductions of up to the inbox's slot, one push round (see reduce_pushed.cpp): `count`
// elements of the message (allreduce) or of a block (reduce_scatter).
CollTask allreduce_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                          const Reducer& reducer);
CollTask reduce_scatter_pushed(CollContext& c, const std::byte* send, std::byte* recv, size_t count,
                               const Reducer& reducer);

// Every member signals every other and waits for all of them (the non-blocking barrier).
CollTask barrier_mesh(CollContext& c);
// barrier_mesh over a signal kind no algorithm uses: every member has arrived at the same kind
// of call (the check before Open MPI's own collective, api/mpi_collectives.h).
CollTask barrier_arrival(CollContext& c);

}  // namespace rankflow::coll
