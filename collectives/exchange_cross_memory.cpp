// allgather and all_to_all, cross-memory (the tables' `cross_memory`): the caller's plain
// buffers on one host. No staging: each member writes the
// block each peer gets (all of send for allgather, block p for member p in all_to_all) straight
// into that peer's recv with one kernel copy (process_memory.h), and copies its own block. Two
// rounds: "ready" (my header is written), then "done" (my blocks are in your recv, or in your
// window).
//
// Each member's header sits in its own window at its own block of `region` (a window region of
// P blocks at the same offset on every member, unused otherwise), where no peer writes: its
// process, its recv, whether that recv is its send (an in-place all_to_all, whose send blocks must
// not be overwritten before they are sent), a sequence number for this call, and one word per
// member. A writer that cannot write a peer's recv (the peer's window is not mapped: another host;
// the kernel refuses; an in-place all_to_all) puts its block into the peer's window at the writer's
// block instead and puts the peer's sequence number into the peer's word for it; the peer copies
// those blocks out once every writer said "done". A member returns only after every peer's "done",
// so nobody reads or writes its memory or its window afterwards. Runs on the thread that drives the
// collective.
#include <atomic>
#include <cstring>
#include <vector>

#include "collectives/collective.h"
#include "collectives/process_memory.h"

namespace rankflow::coll {
namespace {

struct Header {
  int64_t pid = 0;
  uint64_t recv = 0;
  uint64_t in_place_all_to_all = 0;
  uint64_t sequence = 0;
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

CollTask exchange(CollContext& c, size_t region, size_t block, const std::byte* send,
                  std::byte* out, bool per_peer) {
  const int me = c.rank();
  auto block_for = [&](int p) { return per_peer ? send + static_cast<size_t>(p) * block : send; };
  auto header_at = [&](int member) { return region + static_cast<size_t>(member) * block; };
  const Header mine{published_process(), reinterpret_cast<uint64_t>(out),
                    per_peer && send == out ? 1u : 0u, next_sequence()};
  std::memcpy(c.local(header_at(me)), &mine, sizeof mine);
  // The writers' words, cleared before anyone may write them (after this kReady).
  std::memset(c.local(header_at(me) + sizeof(Header)), 0, header_bytes(c.size()) - sizeof(Header));
  PublishedProcess published(c.local(header_at(me)));
  c.notify_all(kReady);
  for (int d = 1; d < c.size(); ++d) {
    const int p = c.peer(d);
    co_await c.await(p, kReady);
    const Header peer = c.read_record<Header>(p, header_at(p));
    const size_t to = static_cast<size_t>(me) * block;
    const bool written = peer.in_place_all_to_all == 0 && c.is_process_of(p, peer.pid) &&
                         write_process_memory(peer.pid, peer.recv + to, block_for(p), block);
    if (!written) {  // into its window at my block, and my word in its header says so
      c.team().put(p, region + to, block_for(p), block);
      c.team().put(p, header_at(p) + sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(me),
                   &peer.sequence, sizeof peer.sequence);
      c.complete_fetches();
    }
    c.notify(p, kDone);
  }
  std::byte* own = out + static_cast<size_t>(me) * block;
  if (own != block_for(me)) std::memmove(own, block_for(me), block);
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
}

// The exchange, from the window region all members use alike and nothing else fills: src,
// unless the input was staged whole there (a non-blocking call; send null), then dst. (A blocking
// call's dst may differ between members: "in" where send is recv, else "out".) `staged()` is
// the pipelined twin, which runs instead where recv is not the caller's memory or a block is
// smaller than the header.
template <typename Staged>
CollTask exchange_or_staged(CollContext& c, size_t src, size_t dst, size_t block,
                            const std::byte* send, std::byte* out, bool per_peer, Staged&& staged) {
  if (block == 0) return CollTask::finished();
  if (out == nullptr || block < header_bytes(c.size())) return staged();
  if (send != nullptr) return exchange(c, src, block, send, out, per_peer);
  return exchange(c, dst, block, c.local(src), out, per_peer);
}

}  // namespace

CollTask allgather_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                size_t elem_size, const std::byte* send, std::byte* out,
                                bool stream_staging) {
  return exchange_or_staged(c, src, dst, block, send, out, false, [&] {
    return allgather_pipelined(c, src, dst, block, elem_size, send, out, stream_staging);
  });
}

CollTask all_to_all_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                 const std::byte* send, std::byte* out, bool stream_staging) {
  return exchange_or_staged(c, src, dst, block, send, out, true, [&] {
    return all_to_all_pipelined(c, src, dst, block, send, out, stream_staging);
  });
}

}  // namespace rankflow::coll
