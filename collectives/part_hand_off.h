// PartHandOff: how the two-phase allreduce on the caller's plain memory hands each reduced part
// to its peers (allreduce_twophase.cpp). Each owner writes its part straight into every peer's
// recv with one kernel copy (process_memory.h) instead of leaving it in its window for the peers
// to fetch: half the copies of the allgather phase, and no core reads lines another core has
// just written. Where it cannot (a peer's window is not mapped, as between hosts; the kernel
// refuses), it puts the part into that peer's window instead and says so in a word of the
// peer's header, and the peer copies it out of its own window. Each peer is handled on its own:
// with ranks on several hosts, the peers on this host still get the kernel copy (until the kernel
// refuses a write once: this process then stops trying, for every peer, process_memory.h). A
// process that does not use the kernel's copies publishes no process, so its peers put to it.
//
// What a member tells its peers sits in its own part of the first segment's staging region,
// which it never stages into (so every segment must be the same length): its process, its recv
// and send, its offer (to read its part of its peers' inputs: the reading protocol,
// allreduce_twophase_read.h; or to stream the parts, in which case nothing is handed off), then
// one word per member, where that member puts the index + 1 of
// the last segment whose part it left in this member's window (or kPartMissing). Written (words
// cleared) before the call's first kReady, read by peers after it; the words are put before each
// kReady2 and read after it; the call's closing kDone round keeps the header until every peer has
// read it. Runs on the thread that drives the collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "collectives/process_memory.h"

namespace rankflow::coll {

class PartHandOff {
 public:
  // True where a call of `a` in segments of `segment` elements hands off: plain send and recv
  // (in place too), from 16 KiB on two members and 128 KiB on more, every segment the same
  // length, room for the header in each part.
  static bool fits(const CollContext& c, const AllreduceArgs& a, size_t segment);
  // Whether `count` elements split into segments of `segment` all of the same length (the
  // hand-off needs it; the twophase split rule asks the same above the tables' sizes).
  static bool splits_evenly(size_t count, size_t segment) {
    return segment > 0 && count % segment == 0;
  }

  // What a member offers in its header: to read its part of its peers' inputs (the reading
  // protocol), or to have every member's parts streamed out of the windows into recv instead of
  // handed off (TwophaseSegments::streams_from); at most one of them.
  enum class Offer : uint64_t { kHandOff = 0, kReads = 1, kStreams = 2 };

  // Publishes this member's header (before the call's first kReady), with its offer.
  PartHandOff(CollContext& c, const AllreduceArgs& a, size_t segment,
              Offer offer = Offer::kHandOff);

  // After the first segment's kReady: every peer's header.
  void learn_peers();
  // After learn_peers: a member that calls in place (send == recv) where this one does not, or
  // the other way round (-1: none). Such a call is not valid (in place is on every member or
  // none, as MPI_IN_PLACE), and in segments it would return wrong results: the staging window
  // lays the two out differently. Every member sees it alike.
  int member_unlike_in_place() const;
  // The InvalidArgument for it, naming this rank and `member`.
  [[noreturn]] void throw_in_place_mismatch(int member) const;
  // After learn_peers: whether this member and every peer offered to read (the call then runs
  // the reading protocol), and whether any member did.
  bool everyone_reads() const { return everyone_offers(Offer::kReads); }
  bool anyone_reads() const;
  bool offers_reads() const { return offer_ == Offer::kReads; }
  // After learn_peers: whether this member and every peer offered to stream (the call then
  // neither reads nor hands off: give and take are not called).
  bool everyone_streams() const { return everyone_offers(Offer::kStreams); }
  // After learn_peers: where `peer`'s input and recv are, in process `pid` (0: not trusted).
  struct PeerBuffers {
    int64_t pid;
    uint64_t send;
    uint64_t recv;
  };
  PeerBuffers buffers_of(int peer) const;
  // The reading protocol, when a member could not make its part: it says so in every peer's
  // header (before kDone), and each peer asks after kDone which member's part is missing (-1).
  void say_part_missing();
  bool said_part_missing() const { return said_part_missing_; }
  int member_whose_part_is_missing() const;
  // After this member reduced its part of segment `index` (`s`, that segment) into its recv:
  // hands it to every peer (before kReady2), with one kernel copy where it can, else a put.
  void give(const AllreduceArgs& s, size_t index);
  // After kReady2 of segment `index`: copies out the parts peers left in this member's window.
  void take(const AllreduceArgs& s, size_t index);
  // After the call's closing kDone: no peer reads the header any more.
  void finish() { published_.withdraw(); }

 private:
  struct Header {
    int64_t pid = 0;
    uint64_t recv = 0;  // the caller's recv, in that process
    uint64_t send = 0;  // the caller's input, in that process
    Offer offer = Offer::kHandOff;
    // then one uint64_t per member (left_word_at)
  };
  static constexpr uint64_t kPartMissing = ~uint64_t{0};
  static size_t header_bytes(int members) {
    return sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(members);
  }
  size_t header_at(int member) const;
  // The word in `member`'s header where `writer` says which segment's part it left there.
  size_t left_word_at(int member, int writer) const {
    return header_at(member) + sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(writer);
  }
  bool write_into_recv(int peer, const std::byte* part, size_t bytes, size_t at_in_message);
  bool everyone_offers(Offer offer) const;

  CollContext& c_;
  AllreduceArgs a_;
  size_t segment_;
  Offer offer_;
  bool said_part_missing_ = false;
  std::vector<Header> peers_;
  PublishedProcess published_;  // withdrawn by finish(), or when a call ends early
};

}  // namespace rankflow::coll
