// CollContext: what every collective algorithm runs on. It wraps a Team and adds the signal
// protocol the algorithms share, the remote-read fast path, and reusable private scratch.
//
// Signals: each (kind, sender) pair has its own monotonic counter on the receiver, and the
// receiver keeps a tally of how many it has consumed. await(peer, kind) waits for one more than
// the tally. Because every member runs the same sequence of collectives, the k-th signal from a
// peer of a kind always belongs to the k-th await, across calls and algorithms. Kinds are
// SignalKind objects that each algorithm file defines for itself (collectives/signal_kind.h).
// The two small-message protocols are pieces of their own, which CollContext owns over the
// team's "inbox" buffer (inbox_buffer_bytes): the push inbox (collectives/inbox.h, c.inbox())
// at its start, then the broadcast streams (collectives/stream.h), one per tier of message
// size in kBroadcastStreams (c.broadcast_stream(bytes)). It owns
// the signal tallies, the closing, the scratch areas, the operation named in diagnostics, whether
// the call being prepared blocks (call_blocks()) and the members' measured round trip
// (c.link_probe(), collectives/link_probe.h).
// Threads: the thread that calls the collective.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/coll_task.h"
#include "collectives/inbox.h"
#include "collectives/link_probe.h"
#include "collectives/signal_kind.h"
#include "collectives/stream.h"
#include "rankflow/team.h"

namespace rankflow::coll {

class CollContext {
 public:
  explicit CollContext(Team team);

  static uint32_t signal_slots_for(int team_size) {
    return SignalKind::count() * static_cast<uint32_t>(team_size);
  }

  Team& team() { return team_; }
  // True when every member maps every other member's window (the same answer on every member):
  // every transfer is a plain store that lands without anyone's progress, so a member may
  // return while its messages are still unread (eager protocols). Otherwise run() and poll()
  // end each collective with a closing (see close_step()).
  bool eager() const { return eager_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The member `offset` places after this one, cyclically. Callers step by less than the team's
  // size either way, which needs no division (an integer division costs tens of cycles, and
  // the small collectives call this a few times each); anything else is reduced in full.
  int peer(int offset) const {
    int member = rank_ + offset;
    if (member >= size_) {
      member -= size_;
    } else if (member < 0) {
      member += size_;
    }
    if (member < 0 || member >= size_) [[unlikely]]
      member = (member % size_ + size_) % size_;
    return member;
  }

  // The operation named in timeout diagnostics, e.g. "allreduce(ring)".
  // `operation` must outlive the call (a string literal or a table entry). The inbox and the
  // streams get theirs only from here (a repeat is skipped, so they must not be set directly).
  void set_operation(const char* operation) {
    if (operation == operation_) return;  // the same collective again: its pieces have it
    operation_ = operation;
    inbox_.set_operation(operation);
    for (AckedStream& stream : streams_)
      stream.set_operation(operation);
  }

  void notify(int peer, const SignalKind& kind, uint64_t count = 1);
  void notify_all(const SignalKind& kind);  // every other member
  // The next signal of `kind` from `peer`: co_await it inside an algorithm.
  SignalAwait await(int peer, const SignalKind& kind);
  // The local word at window `offset` reaching `target` (a flag written by `peer`).
  SignalAwait await_word(size_t offset, uint64_t target, int peer);

  // The small-message protocols over the team's "inbox" buffer: the push inbox, then the
  // broadcast streams. All are absent (has_inbox() false) when the team has no such buffer
  // of inbox_buffer_bytes(size()); algorithms then use their read-based paths.
  // The broadcast streams, smallest message first: a broadcast takes the first that holds its
  // message. Slots of 16 and 32 bytes put four and two messages in a cache line, and their
  // streams run 256 messages deep, so a root running ahead hands its peers one line per few
  // broadcasts, and the lines follow one another (docs/performance.md, "2026-12-05 day").
  static constexpr std::array<StreamShape, 3> kBroadcastStreams{{
      {256, 8, 64},   // up to 8 B: 16-byte slots, four to a line
      {256, 24, 64},  // up to 24 B: 32-byte slots, two to a line
      {64, 512, 16},  // up to 512 B: the flag's line, then the payload's lines
  }};
  // The push every team's inbox holds (teams of up to PushInbox::kLargeSlotMembers hold up to
  // PushInbox::kLargePayloadBytes: inbox().payload_bytes() is this team's).
  static constexpr size_t kInboxBytes = PushInbox::kPayloadBytes;
  // The largest message a broadcast stream takes.
  static constexpr size_t kStreamBytes = kBroadcastStreams.back().payload_bytes;
  // Where broadcast stream `tier` starts in the inbox buffer, and the buffer's whole size.
  static constexpr size_t broadcast_stream_start(int members, size_t tier) {
    size_t at = PushInbox::region_bytes(members);
    for (size_t t = 0; t < tier; ++t)
      at += kBroadcastStreams[t].region_bytes(members);
    return at;
  }
  static constexpr size_t inbox_buffer_bytes(int members) {
    return broadcast_stream_start(members, kBroadcastStreams.size());
  }
  bool has_inbox() const { return inbox_.present(); }
  PushInbox& inbox() { return inbox_; }
  const PushInbox& inbox() const { return inbox_; }
  // The tier of kBroadcastStreams a broadcast of `bytes` takes, and its stream: the same on
  // every member. Larger messages than kStreamBytes get the last stream, whose send throws
  // InvalidArgument for them.
  static constexpr size_t broadcast_stream_tier(size_t bytes) {
    size_t tier = 0;
    while (tier + 1 < kBroadcastStreams.size() && bytes > kBroadcastStreams[tier].payload_bytes)
      ++tier;
    return tier;
  }
  AckedStream& broadcast_stream(size_t bytes) { return streams_[broadcast_stream_tier(bytes)]; }
  // The members' round trip, measured now and then by the algorithms whose choices follow it.
  LinkProbe& link_probe() { return link_probe_; }

  // Whether the collective being prepared blocks its caller (Communicator::allreduce, not
  // iallreduce). Where it does, an algorithm may wait for its peers in the call itself
  // (wait_in_call) instead of suspending a task: a 4-byte pushed allreduce on the 2-core Zen 5
  // spent about 0.025 us of its 0.34 us setting up, resuming and ending the task
  // (docs/performance.md, "Blocking calls wait in the call"). Set only while the caller
  // prepares the call (CallBlocks), so a non-blocking call never waits in its launch.
  bool call_blocks() const { return call_blocks_; }
  class CallBlocks {
   public:
    CallBlocks(CollContext& c, bool blocks) : c_(c) { c_.call_blocks_ = blocks; }
    ~CallBlocks() { c_.call_blocks_ = false; }
    CallBlocks(const CallBlocks&) = delete;
    CallBlocks& operator=(const CallBlocks&) = delete;

   private:
    CollContext& c_;
  };
  // For a call that blocks (call only where call_blocks()): returns once `wait` is satisfied,
  // waiting as run() waits for a suspended task (the team's back-off, transport progress, the
  // team's timeout, and a Timeout naming the operation, this rank and the peer).
  void wait_in_call(const SignalAwait& wait) {
    if (wait.satisfied()) return;
    team_.wait_until([&] { return wait.satisfied(); }, [&] { return describe_wait(wait); });
  }

  // Drives `task` to completion, then its closing unless eager(): progresses the transport
  // while it waits and ends in a Timeout naming the operation, this rank, the peer and the
  // counts when one of its waits passes the limit (each signal it suspends on is a wait of its
  // own, with its own back-off).
  void run(CollTask& task, std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  // Advances `task` once without blocking (progressing the transport); true when it and its
  // closing are complete.
  bool poll(CollTask& task);
  // What `wait` awaited when `limit` passed (zero: the team's timeout), for its Timeout.
  std::string describe_wait(const SignalAwait& wait, std::chrono::nanoseconds limit =
                                                         std::chrono::nanoseconds::zero()) const;

  std::byte* local(size_t offset) { return team_.local_ptr(offset); }
  // `bytes` of `peer`'s window at `offset`: a direct pointer where mapped, otherwise fetched
  // into `fallback` (which must hold `bytes`) and completed before returning.
  const std::byte* read(int peer, size_t offset, size_t bytes, std::byte* fallback);
  // A small record `peer` wrote into its window at `offset` (a trivially copyable struct).
  template <typename Record>
  Record read_record(int peer, size_t offset) {
    Record record;
    const std::byte* at = read(peer, offset, sizeof record, reinterpret_cast<std::byte*>(&record));
    if (at != reinterpret_cast<const std::byte*>(&record)) std::memcpy(&record, at, sizeof record);
    return record;
  }
  // Whether `pid`, which `peer` published in its window, is the process the team knows as that
  // peer (mapped through its shared pages: same host, same pid namespace). Cross-memory writes
  // (process_memory.h) go only there: a record from a member that runs another call, or one
  // withdrawn (0), is not trusted.
  bool is_process_of(int peer, int64_t pid) const {
    return pid != 0 && pid == team_.process_of(peer);
  }
  // Copies `bytes` of `peer`'s window at `offset` into local memory `dst`; complete after
  // complete_fetches().
  void fetch(int peer, size_t offset, void* dst, size_t bytes);
  void complete_fetches() { team_.flush(); }

  // Private scratch, reused across calls (grown on demand). Two independent areas.
  std::byte* scratch(size_t bytes) { return grow(scratch_, bytes); }
  std::byte* scratch2(size_t bytes) { return grow(scratch2_, bytes); }

 private:
  static std::byte* grow(std::vector<std::byte>& area, size_t bytes);
  // The progress rule over UCX: over TCP a transfer, and the completion reply for one, moves
  // only while its owner calls into UCX. So a collective that is not eager() ends with two
  // steps: this member's transfers complete remotely (a flush, during which it keeps serving
  // its peers' transfers), then a barrier among the members (barrier_mesh), during which it
  // keeps progressing too. No member leaves the barrier before every member has finished its
  // flush, so once the call returns no peer needs anything from this member's transport (the
  // barrier's last signals go straight onto idle sockets). One step without blocking; true
  // once both are done.
  bool close_step();
  std::string describe_closing(std::chrono::nanoseconds waited) const;
  uint32_t slot(const SignalKind& kind, int sender) const {
    return kind.index() * static_cast<uint32_t>(size_) + static_cast<uint32_t>(sender);
  }

  Team team_;
  int rank_;
  int size_;
  bool eager_;
  CollTask closing_;  // the closing barrier, while one runs
  bool closing_flushed_ = false;
  std::vector<uint64_t> consumed_;
  std::vector<std::byte> scratch_, scratch2_;
  const char* operation_ = "collective";
  bool call_blocks_ = false;  // see call_blocks()
  PushInbox inbox_;
  std::vector<AckedStream> streams_;  // one per kBroadcastStreams tier, in its order
  LinkProbe link_probe_;
};

// Element range [begin, begin + count) of part `index` when `count` elements are split into
// `parts` nearly equal parts (the first parts are never larger than the last ones by more
// than one). Pure; any count, including fewer elements than parts.
struct Segment {
  size_t begin;
  size_t count;
};
inline Segment partition(size_t count, size_t parts, size_t index) {
  const size_t begin = count / parts * index + std::min(index, count % parts);
  const size_t size = count / parts + (index < count % parts ? 1 : 0);
  return {begin, size};
}

}  // namespace rankflow::coll
