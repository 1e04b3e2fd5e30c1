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
// which it never stages into (so every segment must be the same length): its process and its
// recv, then one word per member, where that member puts the index + 1 of the last segment
// whose part it left in this member's window. Written (words cleared) before the call's first
// kReady, read by peers after it; the words are put before each kReady2 and read after it; the
// call's closing kDone round keeps the header until every peer has read it. Runs on the thread
// that drives the collective.
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

  // Publishes this member's header (before the call's first kReady).
  PartHandOff(CollContext& c, const AllreduceArgs& a, size_t segment);

  // After the first segment's kReady: every peer's header.
  void learn_peers();
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
    // then one uint64_t per member (left_word_at)
  };
  static size_t header_bytes(int members) {
    return sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(members);
  }
  size_t header_at(int member) const;
  // The word in `member`'s header where `writer` says which segment's part it left there.
  size_t left_word_at(int member, int writer) const {
    return header_at(member) + sizeof(Header) + sizeof(uint64_t) * static_cast<size_t>(writer);
  }
  bool write_into_recv(int peer, const std::byte* part, size_t bytes, size_t at_in_message);

  CollContext& c_;
  AllreduceArgs a_;
  size_t segment_;
  std::vector<Header> peers_;
  PublishedProcess published_;  // withdrawn by finish(), or when a call ends early
};

}  // namespace rankflow::coll
