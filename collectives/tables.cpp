// The algorithm tables as data (see registry.h): one table per collective, one entry per
// algorithm, each stating the messages it serves, where it is the built-in choice, where it
// pushes straight from and into the caller's memory, and whether it writes the destination or
// stages the source itself. The entries call the algorithms declared in collective.h through
// small adaptors that take one argument struct per collective (by reference, see Algorithm::run).
// The limits restate the algorithms' own predicates (onephase_pushes, pushes_blocks,
// broadcast_streams, broadcast_pushes); tests/mpi/algorithm_override_test.cpp checks that they
// agree. The `mpi` entries have no run: the library-mode communicator runs Open MPI's collective
// for them.
#include "collectives/registry.h"

namespace rankflow::coll {
namespace {

constexpr size_t kInbox = PushInbox::kPayloadBytes;            // any team
constexpr size_t kLargeInbox = PushInbox::kLargePayloadBytes;  // teams of up to kLargeSlotMembers
constexpr int kLargeSlotMembers = PushInbox::kLargeSlotMembers;
constexpr size_t kStream = CollContext::kStreamBytes;
// Blocks that fit one inbox slot, on two or more members (pushes_blocks): 4 KiB on any team,
// 32 KiB on up to four members. Pushed exchanges are the built-in choice up to 4 KiB
// (kSmallBlocks); larger pushes are chosen where a sweep measured them fastest.
constexpr Ranges kInboxBlocks{Limits{1, kInbox, 2, INT_MAX, true},
                              Limits{kInbox + 1, kLargeInbox, 2, kLargeSlotMembers, true}};
constexpr Limits kSmallBlocks{1, kInbox, 2, INT_MAX, true};
// Allreduce messages onephase pushes (onephase_pushes): up to a slot, zero bytes included.
constexpr Ranges kOnephasePushes{Limits{0, kInbox, 2, INT_MAX, true},
                                 Limits{kInbox + 1, kLargeInbox, 2, kLargeSlotMembers, true}};
// Broadcasts that stream (broadcast_streams): up to a stream slot, any member count.
constexpr Limits kStreamed{0, kStream, 1, INT_MAX, true};
// Broadcasts pushed through the inbox (broadcast_pushes): two members only.
constexpr Limits kPushedPair{1, kLargeInbox, 2, 2, true};
constexpr Limits kSmallPushedPair{1, kInbox, 2, 2, true};
// Where onephase is the built-in allreduce (2026-11-30 sweep, docs/collectives.md).
constexpr Limits kSmallAllreduce{0, kInbox};
// No entry stages the caller's source with non-temporal stores any more (Algorithm::
// streams_staged stays kNoMessage; bench --stage-copy stream still forces it). On the AMD EPYC
// of 2026-12-01 they had beaten memcpy for broadcast at 16-512 KiB, allgather from 2 MiB blocks
// and all_to_all from 16 KiB blocks. On the Intel Xeon of 2026-12-03, batch by batch in one
// process (bench --stage-copy ab, 2 members, 32 KiB-8 MiB), memcpy won at every size: broadcast
// x1.09-1.31 of Open MPI at 256 KiB-4 MiB against x0.73-0.93, the mesh allgather x0.79-1.10
// against x0.51-0.68, the mesh all_to_all x0.56-0.88 against x0.28-0.50, the pipelined ones
// likewise. The peer then reads the staged lines from this core's cache, not from memory.
// Where the latest sweeps (2026-12-02, 2 members, each algorithm's time relative to Open MPI's
// in the same run; collectives/sweep_choices.txt: symmetric buffers from a median of 5 quick
// sweeps, plain buffers from 4 KiB from a median of 3 full-batch sweeps at 18:40) found another
// algorithm than `preferred` fastest (measured_symmetric, measured_plain). A size between two
// measured powers of two goes with the larger one.
// allreduce: onephase at 8-32 KiB on plain buffers (pushed through the inbox's 32 KiB slots
// since 2026-12-03: one round, nothing staged); twophase at 2-4 KiB on symmetric buffers, and
// from 8 KiB as preferred (onephase read in place there until the 2026-12-03 sweep, which
// found the pushed onephase slower than twophase on symmetric buffers).
constexpr Ranges kOnephasePlain = kTwoMembers(4097, 32 << 10);
// On more members a push costs a copy per peer and the reduction reads every peer's input, so
// twophase takes over earlier: 16-core Intel Xeon, 2026-12-04, 4, 8 and 16 members, one sweep
// each of onephase, twophase and ring at 256 B-64 KiB (docs/performance.md, "Scaling"):
// symmetric from 1 KiB on all three (4 members 1.32 against onephase's 1.57 us, 16 members
// 5.74 against 7.07), plain from 4 KiB on 4 members (3.91 against 4.78) and from 2 KiB on 8
// and 16 (5.12 against 6.26, 10.08 against 11.68). A count between two measured ones takes the
// rule of the one below; three members keep the preferred choices (not measured).
constexpr Ranges kTwophaseSymmetric{kTwoMembers(1025, kInbox), Limits{513, kInbox, 4, INT_MAX}};
constexpr Ranges kTwophasePlain{Limits{2049, kInbox, 4, 7}, Limits{1025, kInbox, 8, INT_MAX}};
// The exchanges and broadcast on symmetric buffers: reading in place beats one inbox round from
// 2 KiB blocks (the slot's copy costs more than a read). Broadcast: pushed beats streamed at
// 512 B on symmetric buffers (on plain ones streamed wins there: 2026-12-03 sweep).
constexpr Ranges kReadInPlaceSymmetric = kTwoMembers(1025, kInbox);
constexpr Ranges kPushedBroadcast = kTwoMembers(257, 512);
// On plain buffers, the inbox's 32 KiB slots on two members: one push round beats Open MPI's
// eager copy for allgather and all_to_all blocks and broadcasts of 8 KiB (2026-12-03, x1.2-1.5;
// at 16 KiB x0.8-1.0, where Open MPI's copy stays). Allreduce pushes up to 32 KiB through
// onephase (kOnephasePlain: onephase_pushes).
constexpr Ranges kPushedPlain = kTwoMembers(kInbox + 1, 8 << 10);
// reduce_scatter pushes every block that fits a slot (8-32 KiB blocks: x1.2-1.9 faster than the
// staged mesh, 2026-12-03 sweep).
constexpr Ranges kPushedReduceScatterPlain = kTwoMembers(kInbox + 1, kLargeInbox);
// Open MPI (the `mpi` entries) on plain buffers: on one host it copies a message once, through
// CMA, where a staged path copies it into the window and the peers copy it out. On two members
// it runs as a pairwise exchange that copies the own block while the transfer runs
// (api/mpi_pairwise.h). allgather and all_to_all: `cross_memory` from 16 KiB blocks up, which on
// one host copies each block straight from the sender's send into the peers' recv (written, or
// read where the pair offers to read: exchange_cross_memory.cpp;
// 2026-12-03 late night: x1.24-1.33 of Open MPI at 16 KiB blocks against x1.00-1.01 for its own
// transfer, x1.68-2.51 at 32-512 KiB, x1.03-1.59 to 8 MiB). At 16-32 MiB blocks the two are
// within a few percent and the machine decides: on the Intel Xeon of 2026-12-03 the kernel copy
// read x0.95-0.96 against Open MPI's transfer's x1.00-1.05; on the AMD EPYC of 2026-12-04 (median
// of 3 full sweeps, time relative to Open MPI's) 0.98 / 0.96 against 1.03 / 1.04 for allgather
// and 0.92 / 0.95 against 1.00 / 1.08 for all_to_all, and the bench's rows x1.02-1.33 against
// x0.89-1.00 for allgather. The sweep of 2026-12-04 holds (docs/performance.md).
// broadcast at 16-32 KiB (from 64 KiB `direct` wins: on one host it copies straight between
// the processes, the root's core writing a share while each peer reads the rest, x1.46-2.00 of
// Open MPI, 2026-12-03 late night; at 32 KiB it measured x1.10 against x1.00, within the
// sweep's tolerance, and a non-blocking call there then ran x0.51 of MPI_Ibcast against x0.69
// pushed, so Open MPI's transfer, with the push for non-blocking calls, stays). Never for
// allreduce and reduce_scatter, whose staged paths reduce while they copy.
// (Until 2026-12-04 the `pipelined` entry switched to the cross-memory copy by itself from 16 KiB
// blocks, so the sweeps of those days name it there.) On 4, 8 and 16 members (16-core Intel
// Xeon, 2026-12-04, plain buffers, one sweep) `cross_memory` beat the staged mesh from 16 KiB
// blocks up: all_to_all x1.25-2.50 of Open
// MPI's busbw against x0.65-1.23 (the mesh below 1.0 on every count), allgather x1.23-2.63
// against x1.00-1.64, but for two near-ties at 16 KiB blocks (8 members x1.23 against x1.23,
// 16 members x1.33 against x1.44, within the tolerance). Smaller blocks read mixed and keep the
// tables' choice; three members keep the mesh (not measured).
// (`probed`, the cross-memory exchange or the staged one as member 0's probe of the members'
// round trip finds the machine, runs where a machine profile chooses it, exchange_choice.cpp.)
constexpr Ranges kCrossMemoryExchangePlain{kTwoMembers((8 << 10) + 1, SIZE_MAX),
                                           Limits{(8 << 10) + 1, SIZE_MAX, 4, INT_MAX}};
constexpr Ranges kOpenMpiBroadcast = kTwoMembers((8 << 10) + 1, 32 << 10);

// ---- allreduce: the algorithms take AllreduceArgs themselves; the coroutines' adaptors copy
// them into the frame.

CollTask allreduce_twophase_entry(CollContext& c, const AllreduceArgs& a) {
  return allreduce_twophase(c, a);
}
CollTask allreduce_ring_entry(CollContext& c, const AllreduceArgs& a) {
  return allreduce_ring(c, a);
}
CollTask allreduce_bidirectional_ring_entry(CollContext& c, const AllreduceArgs& a) {
  return allreduce_bidirectional_ring(c, a);
}
CollTask allreduce_ibing_entry(CollContext& c, const AllreduceArgs& a) {
  return allreduce_ibing(c, a);
}

//  name, run, summary, label, serves, preferred, pushes, writes_dst, stages_src,
//  streams_staged, measured_symmetric, measured_plain
constexpr AllreduceAlgorithm kAllreduce[] = {
    {"onephase",
     &allreduce_onephase,
     "mesh: every member sees every input",
     "allreduce(onephase)",
     kAnyMessage,
     kSmallAllreduce,
     kOnephasePushes,
     true,
     false,
     kNoMessage,
     {},
     kOnephasePlain},
    {"twophase", &allreduce_twophase_entry, "reduce-scatter then allgather over the mesh",
     "allreduce(twophase)", kAnyMessage, kAnyMessage, kNoMessage, true, true, kNoMessage,
     kTwophaseSymmetric, kTwophasePlain},
    {"ring",
     &allreduce_ring_entry,
     "reduce-scatter and allgather around one ring",
     "allreduce(ring)",
     kAnyMessage,
     kNoMessage,
     kNoMessage,
     false,
     false,
     kNoMessage,
     {},
     {}},
    {"bidirectional_ring", &allreduce_bidirectional_ring_entry,
     "two half-rings, opposite directions", "allreduce(bidirectional_ring)", kAnyMessage,
     kNoMessage, kNoMessage, false, false},
    {"ibing", &allreduce_ibing_entry, "interleaved bidirectional ring (Zong et al.)",
     "allreduce(ibing)", kAnyMessage, kNoMessage, kNoMessage, false, false},
    {"mpi",
     nullptr,
     "Open MPI's MPI_Allreduce on the communicator (blocking calls)",
     "allreduce(mpi)",
     kAnyMessage,
     kNoMessage,
     kNoMessage,
     true,
     true,
     kNoMessage,
     {},
     {},
     true},
};

// ---- allgather and all_to_all

// An exchange that serves every message, is the built-in choice nowhere, stages the caller's
// source and writes its recv itself, and runs only where a sweep measured it fastest on plain
// buffers (`measured_plain`), or where it is forced: the pipelined, cross-memory and Open MPI
// entries of both tables.
constexpr Algorithm<ExchangeArgs> plain_exchange(std::string_view name,
                                                 CollTask (*run)(CollContext&, const ExchangeArgs&),
                                                 std::string_view summary, const char* label,
                                                 Ranges measured_plain, bool open_mpi = false) {
  return {.name = name,
          .run = run,
          .summary = summary,
          .label = label,
          .serves = kAnyMessage,
          .preferred = kNoMessage,
          .pushes = kNoMessage,
          .writes_dst = true,
          .stages_src = true,
          .measured_plain = measured_plain,
          .open_mpi = open_mpi};
}

// ---- allgather

CollTask allgather_pushed_entry(CollContext& c, const ExchangeArgs& a) {
  return allgather_pushed(c, a.src_ptr, a.dst_ptr, a.block_bytes);
}
CollTask allgather_mesh_entry(CollContext& c, const ExchangeArgs& a) {
  return allgather_mesh(c, a.src, a.dst, a.block_bytes / a.elem_size, a.elem_size, a.dst_ptr);
}

CollTask allgather_pipelined_entry(CollContext& c, const ExchangeArgs& a) {
  return allgather_pipelined(c, a.src, a.dst, a.block_bytes, a.elem_size, a.src_ptr, a.dst_ptr,
                             a.stream_staging);
}
CollTask allgather_cross_memory_entry(CollContext& c, const ExchangeArgs& a) {
  return allgather_cross_memory(c, a.src, a.dst, a.block_bytes, a.elem_size, a.src_ptr, a.dst_ptr,
                                a.stream_staging, false);
}
CollTask allgather_probed_entry(CollContext& c, const ExchangeArgs& a) {
  return allgather_cross_memory(c, a.src, a.dst, a.block_bytes, a.elem_size, a.src_ptr, a.dst_ptr,
                                a.stream_staging, true);
}

constexpr AllgatherAlgorithm kAllgather[] = {
    {"pushed",
     &allgather_pushed_entry,
     "each block into every peer's inbox, one round",
     "allgather(pushed)",
     kInboxBlocks,
     kSmallBlocks,
     kInboxBlocks,
     true,
     false,
     kNoMessage,
     {},
     kPushedPlain},
    {"mesh", &allgather_mesh_entry, "every member reads each peer's block from its window",
     "allgather(mesh)", kAnyMessage, kAnyMessage, kNoMessage, true, false, kNoMessage,
     kReadInPlaceSymmetric},
    plain_exchange("pipelined", &allgather_pipelined_entry,
                   "the mesh, with peers reading each chunk of the staged input while the next "
                   "is staged",
                   "allgather(pipelined)", {}),
    plain_exchange("cross_memory", &allgather_cross_memory_entry,
                   "each block straight into the peers' recv, one kernel copy each, written or "
                   "read (one host; else their windows)",
                   "allgather(cross_memory)", kCrossMemoryExchangePlain),
    plain_exchange("probed", &allgather_probed_entry,
                   "cross_memory, or staged like pipelined where member 0's probe of the "
                   "members' round trip finds the mode its machine profile stages in",
                   "allgather(probed)", {}),
    plain_exchange("mpi", nullptr, "Open MPI's MPI_Allgather on the communicator (blocking calls)",
                   "allgather(mpi)", {}, true),
};

// ---- reduce_scatter

CollTask reduce_scatter_pushed_entry(CollContext& c, const ReduceScatterArgs& a) {
  return reduce_scatter_pushed(c, a.src_ptr, a.dst_ptr, a.count, *a.reducer);
}
CollTask reduce_scatter_mesh_entry(CollContext& c, const ReduceScatterArgs& a) {
  return reduce_scatter_mesh(c, a.src, a.dst, a.count, *a.reducer, a.src_ptr, a.dst_ptr);
}

constexpr ReduceScatterAlgorithm kReduceScatter[] = {
    {"pushed",
     &reduce_scatter_pushed_entry,
     "block p into member p's inbox, one round",
     "reduce_scatter(pushed)",
     kInboxBlocks,
     kSmallBlocks,
     kInboxBlocks,
     true,
     false,
     kNoMessage,
     {},
     kPushedReduceScatterPlain},
    {"mesh", &reduce_scatter_mesh_entry, "every member reads its block of each peer's input",
     "reduce_scatter(mesh)", kAnyMessage, kAnyMessage, kNoMessage, true, true, kNoMessage,
     kReadInPlaceSymmetric},
    {"mpi",
     nullptr,
     "Open MPI's MPI_Reduce_scatter_block on the communicator (blocking calls)",
     "reduce_scatter(mpi)",
     kAnyMessage,
     kNoMessage,
     kNoMessage,
     true,
     true,
     kNoMessage,
     {},
     {},
     true},
};

// ---- broadcast

CollTask broadcast_streamed_entry(CollContext& c, const BroadcastArgs& a) {
  return broadcast_streamed(c, a.ptr, a.bytes, a.root);
}
CollTask broadcast_pushed_entry(CollContext& c, const BroadcastArgs& a) {
  return broadcast_pushed(c, a.ptr, a.bytes, a.root);
}
CollTask broadcast_direct_entry(CollContext& c, const BroadcastArgs& a) {
  return broadcast_direct(c, a.buffer, a.bytes, a.root, a.ptr, a.stage_from, a.stream_staging);
}
CollTask broadcast_staged_entry(CollContext& c, const BroadcastArgs& a) {
  return broadcast_staged(c, a.buffer, a.bytes, a.root, a.ptr, a.stage_from, a.stream_staging);
}

constexpr BroadcastAlgorithm kBroadcast[] = {
    {"streamed", &broadcast_streamed_entry,
     "the root stores into 64- or 256-deep streams and returns", "broadcast(streamed)", kStreamed,
     kStreamed, kStreamed, true, false},
    {"pushed", &broadcast_pushed_entry, "two members: the root pushes into the peer's inbox",
     "broadcast(pushed)", kPushedPair, kSmallPushedPair, kPushedPair, true, false, kNoMessage,
     kPushedBroadcast, kPushedPlain},
    {"direct", &broadcast_direct_entry, "members copy from the root's window", "broadcast(direct)",
     kAnyMessage, kAnyMessage, kNoMessage, true, true, kNoMessage, kReadInPlaceSymmetric},
    // Only where a machine profile chooses it (its measured ranges are empty).
    {"staged", &broadcast_staged_entry, "the root stages chunks in its window, members copy them",
     "broadcast(staged)", kAnyMessage, kNoMessage, kNoMessage, true, true},
    {"mpi",
     nullptr,
     "Open MPI's MPI_Bcast on the communicator (blocking calls)",
     "broadcast(mpi)",
     kAnyMessage,
     kNoMessage,
     kNoMessage,
     true,
     true,
     kNoMessage,
     {},
     kOpenMpiBroadcast,
     true},
};

// ---- all_to_all

CollTask all_to_all_pushed_entry(CollContext& c, const ExchangeArgs& a) {
  return all_to_all_pushed(c, a.src_ptr, a.dst_ptr, a.block_bytes);
}
CollTask all_to_all_mesh_entry(CollContext& c, const ExchangeArgs& a) {
  return all_to_all_mesh(c, a.src, a.dst, a.block_bytes, a.dst_ptr);
}

CollTask all_to_all_pipelined_entry(CollContext& c, const ExchangeArgs& a) {
  return all_to_all_pipelined(c, a.src, a.dst, a.block_bytes, a.src_ptr, a.dst_ptr,
                              a.stream_staging);
}
CollTask all_to_all_cross_memory_entry(CollContext& c, const ExchangeArgs& a) {
  return all_to_all_cross_memory(c, a.src, a.dst, a.block_bytes, a.src_ptr, a.dst_ptr,
                                 a.stream_staging, false);
}
CollTask all_to_all_probed_entry(CollContext& c, const ExchangeArgs& a) {
  return all_to_all_cross_memory(c, a.src, a.dst, a.block_bytes, a.src_ptr, a.dst_ptr,
                                 a.stream_staging, true);
}

constexpr AllToAllAlgorithm kAllToAll[] = {
    {"pushed",
     &all_to_all_pushed_entry,
     "block p into member p's inbox, one round",
     "all_to_all(pushed)",
     kInboxBlocks,
     kSmallBlocks,
     kInboxBlocks,
     true,
     false,
     kNoMessage,
     {},
     kPushedPlain},
    {"mesh", &all_to_all_mesh_entry, "every member reads its block of each peer's input",
     "all_to_all(mesh)", kAnyMessage, kAnyMessage, kNoMessage, true, false, kNoMessage,
     kReadInPlaceSymmetric},
    plain_exchange("pipelined", &all_to_all_pipelined_entry,
                   "the mesh, with peers reading each chunk of the staged blocks while the next "
                   "is staged",
                   "all_to_all(pipelined)", {}),
    plain_exchange("cross_memory", &all_to_all_cross_memory_entry,
                   "each peer's block straight into the peers' recv, one kernel copy each, "
                   "written or read (one host; else their windows)",
                   "all_to_all(cross_memory)", kCrossMemoryExchangePlain),
    plain_exchange("probed", &all_to_all_probed_entry,
                   "cross_memory, or staged like pipelined where member 0's probe of the "
                   "members' round trip finds the mode its machine profile stages in",
                   "all_to_all(probed)", {}),
    plain_exchange("mpi", nullptr, "Open MPI's MPI_Alltoall on the communicator (blocking calls)",
                   "all_to_all(mpi)", {}, true),
};

}  // namespace

constexpr AlgorithmTable<AllreduceArgs> kAllreduceTable("allreduce", "RANKFLOW_ALLREDUCE",
                                                        kAllreduce);
constexpr AlgorithmTable<ExchangeArgs> kAllgatherTable("allgather", "RANKFLOW_ALLGATHER",
                                                       kAllgather);
constexpr AlgorithmTable<ReduceScatterArgs> kReduceScatterTable("reduce_scatter",
                                                                "RANKFLOW_REDUCE_SCATTER",
                                                                kReduceScatter);
constexpr AlgorithmTable<BroadcastArgs> kBroadcastTable("broadcast", "RANKFLOW_BROADCAST",
                                                        kBroadcast);
constexpr AlgorithmTable<ExchangeArgs> kAllToAllTable("all_to_all", "RANKFLOW_ALL_TO_ALL",
                                                      kAllToAll);

}  // namespace rankflow::coll
