// The cross-memory exchange of allgather and all_to_all (the tables' `cross_memory` runs it
// where exchange_choice.cpp does not stage the blocks): the caller's plain buffers on one host.
// No staging: each block one member gets from another (all of send for allgather, block p for
// member p in all_to_all) moves straight from the sender's send into the receiver's recv by the
// kernel (process_memory.h), made by the sender (writes) or by the receiver (a read), and each
// member copies its own block. An allgather member that writes a block over kKeptBlockChunk
// writes it a chunk at a time and copies each chunk into its own block straight after, from its
// cache (write_block_keeping_own); every other block is one kernel copy. Two rounds: "ready" (my
// header is written), then "done" (I am done with your memory: my blocks are in your recv, or in
// your window, and I have read yours where I read).
//
// Which side copies is each pair's choice, which needs no agreement beyond the headers: each
// member offers in its header, before "ready", to read (`reads`), and a pair in which both
// offered reads, each its own blocks from the other's send; any other pair writes (so members
// that judge the machine differently both write, rather than one making both copies). A member
// offers where RANKFLOW_CROSS_MEMORY_DIRECTION says read, or where it is auto and the machine
// profile measured reads faster at this block size and in the machine's present state (the
// members' round trip, LinkProbe, which exchange_choice.cpp measures now and then before the
// exchange). It offers only where its copies have reached every peer before (a refused read could
// not be delivered another way), and never for an in-place all_to_all (its send blocks must not be
// overwritten before the peers have read them).
//
// Each member's header sits in its own window at its own block of `region` (a window region of
// P blocks at the same offset on every member, unused otherwise), where no peer writes: its
// process, its recv and send, whether that recv is its send (an in-place all_to_all), whether it
// reads, a sequence number for this call, and one word per member. A writer that cannot write a
// peer's recv (the peer's window is not mapped: another host; the kernel refuses; an in-place
// all_to_all) puts its block into the peer's window at the writer's block instead and puts the
// peer's sequence number into the peer's word for it; the peer copies those blocks out once every
// writer said "done". A member returns only after every peer's "done", so nobody reads or writes
// its memory or its window afterwards. Runs on the thread that drives the collective.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/exchange_cross_memory.h"
#include "collectives/link_probe.h"
#include "collectives/machine_profile.h"
#include "collectives/process_memory.h"
#include "collectives/stage_copy.h"
#include "common/env.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

struct Header {
  int64_t pid = 0;
  uint64_t recv = 0;
  uint64_t in_place_all_to_all = 0;
  uint64_t sequence = 0;
  uint64_t send = 0;
  uint64_t reads = 0;  // this member offers to read its peers' blocks (1), or not (0)
  // then one uint64_t per member: the sequence of the call whose block that member left in
  // this window
};

size_t header_bytes(int members) {
  return sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(members);
}

// Different in every call of this process, and unlike anything staged data leaves there.
uint64_t next_sequence() {
  static std::atomic<uint64_t> count{0};
  return (uint64_t{0x5ca1ab1e} << 32) |
         (count.fetch_add(1, std::memory_order_relaxed) & 0xffffffffu);
}

// Whether this member offers to read its peers' blocks this call (see the top of the file).
bool reads_this_call(CollContext& c, size_t block, bool in_place_all_to_all) {
  if (in_place_all_to_all || !process_memory_usable()) return false;
  static const env::CrossMemoryDirection direction = env::cross_memory_direction();
  if (direction == env::CrossMemoryDirection::kWrite) return false;
  if (direction == env::CrossMemoryDirection::kAuto) {
    if (block < local_cross_memory_reads().min_block ||
        !c.link_probe().round_trip_under(local_fast_round_trip_ns()))
      return false;
  }
  for (int d = 1; d < c.size(); ++d)
    if (!copies_reached(c.team().process_of(c.peer(d)))) return false;
  return true;
}

// Leaves my block for `peer` in its window at my block of `region`, with my word in its header
// (at its block of `region`) saying so: the peer copies it out once every writer said "done".
void leave_block_in_window(CollContext& c, size_t region, int peer, const Header& theirs,
                           size_t block, const std::byte* mine) {
  const size_t at = static_cast<size_t>(c.rank()) * block;
  const size_t header = region + static_cast<size_t>(peer) * block;
  c.team().put(peer, region + at, mine, block);
  c.team().put(peer, header + sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(c.rank()),
               &theirs.sequence, sizeof theirs.sequence);
  c.complete_fetches();
}

// Whether my kernel copies may write into `peer`'s recv (its header `theirs`).
bool writes_into_recv(CollContext& c, int peer, const Header& theirs) {
  return theirs.in_place_all_to_all == 0 && process_memory_usable() &&
         c.is_process_of(peer, theirs.pid);
}

// Delivers my block for `peer` (its header `theirs`) into its recv, or into its window where the
// kernel will not write it there.
void write_block(CollContext& c, int peer, const Header& theirs, size_t region, size_t block,
                 const std::byte* mine) {
  const size_t at = static_cast<size_t>(c.rank()) * block;
  if (writes_into_recv(c, peer, theirs) &&
      write_process_memory(theirs.pid, theirs.recv + at, mine, block))
    return;
  leave_block_in_window(c, region, peer, theirs, block, mine);
}

// Reads `peer`'s block for me (its header `theirs`) into `into`; false where the kernel refused
// (the peer exited, or revoked the permission since this process's copies reached it). The peer
// has left the block to me, so there is no other way to deliver it.
bool read_block(CollContext& c, int peer, const Header& theirs, size_t block, bool per_peer,
                std::byte* into) {
  const uint64_t from = theirs.send + (per_peer ? static_cast<size_t>(c.rank()) * block : 0);
  return c.is_process_of(peer, theirs.pid) && read_process_memory(theirs.pid, from, into, block);
}

std::atomic<uint64_t> g_own_blocks_streamed{0};

bool apart(const std::byte* a, const std::byte* b, size_t bytes) {
  const auto a_at = reinterpret_cast<uintptr_t>(a);
  const auto b_at = reinterpret_cast<uintptr_t>(b);
  return a_at + bytes <= b_at || b_at + bytes <= a_at;
}

// Whether this member's own copy from `input` into `own` streams (non-temporal stores): where
// the profile says so for this collective's recv size (MachineProfile::stream_own_block) and
// the two do not overlap.
bool streams_own_block(std::byte* own, const std::byte* input, size_t block, int members,
                       bool all_to_all) {
  return apart(own, input, block) &&
         static_cast<size_t>(members) * block >= local_stream_own_block_from_recv(all_to_all);
}

// `bytes` of the own block (apart from its input), streamed or not.
void copy_own_part(std::byte* own, const std::byte* input, size_t bytes, bool streams) {
  if (streams) {
    stream_copy(own, input, bytes);
  } else {
    std::memcpy(own, input, bytes);
  }
}

// Copies this member's own block from its input into recv.
void copy_own_block(std::byte* own, const std::byte* input, size_t block, int members,
                    bool all_to_all) {
  if (own == input) return;
  if (streams_own_block(own, input, block, members, all_to_all)) {
    copy_own_part(own, input, block, true);
    g_own_blocks_streamed.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::memmove(own, input, block);
  }
}

// Whether the allgather's block for `peer` goes a chunk at a time with the own copy beside it
// (write_block_keeping_own): more than one chunk, out of place, and the kernel may write there.
bool keeps_own_beside_write(CollContext& c, int peer, const Header& theirs, size_t block,
                            const std::byte* mine, const std::byte* own) {
  return kernel_writes_of_block(block, true) > 1 && apart(own, mine, block) &&
         writes_into_recv(c, peer, theirs);
}

// Allgather sends every peer the block it keeps. Where keeps_own_beside_write, it goes
// kKeptBlockChunk at a time, each chunk copied into this member's own block (`own`) straight
// after, while it is still in this core's cache: the input is read from memory once instead of
// twice (docs/performance.md, "Writing the allgather's kept block chunk by chunk"). False where
// it did not apply (nothing was copied). A refused write, at any chunk, sends the whole block
// through the peer's window instead, as write_block does.
bool write_block_keeping_own(CollContext& c, int peer, const Header& theirs, size_t region,
                             size_t block, const std::byte* mine, std::byte* own) {
  if (!keeps_own_beside_write(c, peer, theirs, block, mine, own)) return false;
  const bool streams = streams_own_block(own, mine, block, c.size(), false);
  const uint64_t to = theirs.recv + static_cast<size_t>(c.rank()) * block;
  bool written = true;
  for (size_t first = 0; first < block; first += kKeptBlockChunk) {
    const size_t length = std::min(kKeptBlockChunk, block - first);
    written = written && write_process_memory(theirs.pid, to + first, mine + first, length);
    copy_own_part(own + first, mine + first, length, streams);
  }
  if (streams) g_own_blocks_streamed.fetch_add(1, std::memory_order_relaxed);
  if (!written) leave_block_in_window(c, region, peer, theirs, block, mine);
  return true;
}

}  // namespace

size_t cross_memory_header_bytes(int members) {
  return header_bytes(members);
}

CollTask cross_memory_exchange(CollContext& c, size_t region, size_t block, const std::byte* send,
                               std::byte* out, bool per_peer) {
  const int me = c.rank();
  auto block_for = [&](int p) { return per_peer ? send + static_cast<size_t>(p) * block : send; };
  auto header_at = [&](int member) { return region + static_cast<size_t>(member) * block; };
  const bool in_place_all_to_all = per_peer && send == out;
  int unread = -1;  // a peer whose block the kernel refused to read
  const Header mine{published_process(),
                    reinterpret_cast<uint64_t>(out),
                    in_place_all_to_all ? 1u : 0u,
                    next_sequence(),
                    reinterpret_cast<uint64_t>(send),
                    reads_this_call(c, block, in_place_all_to_all) ? 1u : 0u};
  std::memcpy(c.local(header_at(me)), &mine, sizeof mine);
  // The writers' words, cleared before anyone may write them (after this kReady).
  std::memset(c.local(header_at(me) + sizeof(Header)), 0, header_bytes(c.size()) - sizeof(Header));
  PublishedProcess published(c.local(header_at(me)));
  c.notify_all(kReady);
  std::byte* own = out + static_cast<size_t>(me) * block;
  bool own_copied = false;
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    co_await c.await(p, kReady);
    const Header theirs = c.read_record<Header>(p, header_at(p));
    if (mine.reads != 0 && theirs.reads != 0) {  // the pair reads (both offered): each its own
      if (!read_block(c, p, theirs, block, per_peer, out + static_cast<size_t>(p) * block))
        unread = p;  // the protocol goes on, so that no peer is left using this member's memory
    } else if (!per_peer && !own_copied &&
               write_block_keeping_own(c, p, theirs, region, block, send, own)) {
      own_copied = true;  // allgather: the first peer written took the own block's copy along
    } else {
      write_block(c, p, theirs, region, block, block_for(p));
    }
    c.notify(p, kDone);
  }
  if (!own_copied) copy_own_block(own, block_for(me), block, c.size(), per_peer);
  for (int d = 1; d < c.size(); ++d)
    co_await c.await(c.peer(-d), kDone);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    uint64_t left = 0;
    std::memcpy(&left,
                c.local(header_at(me) + sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(p)),
                sizeof left);
    if (left != mine.sequence) continue;
    const size_t from = static_cast<size_t>(p) * block;
    std::memcpy(out + from, c.local(region + from), block);
  }
  published.withdraw();  // every peer is done with it (their "done")
  if (unread >= 0) {
    throw TransportError("cross-memory exchange: rank " + std::to_string(me) +
                         " could not read the block of member " + std::to_string(unread) +
                         " (process_vm_readv refused, although this rank's copies reached it "
                         "before; did the member exit?); RANKFLOW_CROSS_MEMORY_DIRECTION=write "
                         "has every block written instead");
  }
}

size_t kernel_writes_of_block(size_t block, bool allgather) {
  return allgather && block > kKeptBlockChunk ? (block + kKeptBlockChunk - 1) / kKeptBlockChunk : 1;
}

uint64_t own_blocks_streamed() {
  return g_own_blocks_streamed.load(std::memory_order_relaxed);
}

}  // namespace rankflow::coll
