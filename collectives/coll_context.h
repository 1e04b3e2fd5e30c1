// CollContext: what every collective algorithm runs on. It wraps a Team and adds the signal
// protocol the algorithms share, the remote-read fast path, and reusable private scratch.
//
// Signals: each (kind, sender) pair has its own monotonic counter on the receiver, and the
// receiver keeps a tally of how many it has consumed. await(peer, kind) waits for one more than
// the tally. Because every member runs the same sequence of collectives, the k-th signal from a
// peer of a kind always belongs to the k-th await, across calls and algorithms. Kinds are
// SignalKind objects that each algorithm file defines for itself (collectives/signal_kind.h).
// Threads: the thread that calls the collective.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "collectives/coll_task.h"
#include "collectives/signal_kind.h"
#include "rankflow/team.h"

namespace rankflow::coll {

// The inbox protocols' own kinds: a pushed broadcast's acknowledgement, and the broadcast
// stream's acknowledgement of every kStreamAckEvery messages.
extern const SignalKind kBroadcastAck;
extern const SignalKind kStreamAck;

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
  int peer(int offset) const { return ((rank_ + offset) % size_ + size_) % size_; }

  // The operation named in timeout diagnostics, e.g. "allreduce(ring)".
  // `operation` must outlive the call (a string literal or a table entry).
  void set_operation(const char* operation) { operation_ = operation; }

  void notify(int peer, const SignalKind& kind, uint64_t count = 1);
  void notify_all(const SignalKind& kind);  // every other member
  // The next signal of `kind` from `peer`: co_await it inside an algorithm.
  SignalAwait await(int peer, const SignalKind& kind);
  // The local word at window `offset` reaching `target` (a flag written by `peer`).
  SignalAwait await_word(size_t offset, uint64_t target, int peer);

  // Low-latency inbox: every member has, per parity and per sender, a slot of a flag word
  // followed by up to kInboxBytes of payload, in the "inbox" buffer of the team's window.
  static constexpr size_t kInboxBytes = 4096;
  static constexpr size_t kInboxStride = 4160;  // 8-byte flag + payload, in whole cache lines
  static size_t inbox_buffer_bytes(int members) {
    return (2 * kInboxStride + kStreamSlots * kStreamStride) * static_cast<size_t>(members);
  }
  bool has_inbox() const { return inbox_ != SIZE_MAX; }
  size_t inbox_slot(uint64_t sequence, int sender) const {
    return inbox_ + ((sequence & 1) * size_ + static_cast<size_t>(sender)) * kInboxStride;
  }
  uint64_t next_inbox_sequence() { return ++inbox_sequence_; }
  // Writes `bytes` of payload and then flag = `sequence` into `peer`'s slot for this member:
  // direct stores where mapped, else UCX put, fence, put from a private outbox slot (of the
  // same parity, so it is free again once the peer has consumed it; no flush is needed).
  //
  // A slot is rewritten two sequences later, so push() first needs evidence that the peer has
  // finished the collective two sequences back: its own push for a later sequence (recorded by
  // await_push), or its acknowledgement of a broadcast this member rooted (a pushed broadcast's
  // root does not wait for its peers). push() waits for acknowledgements when it must.
  void push(int peer, uint64_t sequence, const void* payload, size_t bytes);
  // The flag of `peer`'s push for `sequence` in this member's inbox: once it is there the peer
  // has finished every earlier collective. (Recorded when the wait is made: the coroutine
  // completes before this member pushes again.)
  SignalAwait await_push(int peer, uint64_t sequence) {
    finished_[peer] = std::max(finished_[peer], sequence - 1);
    const std::byte* flag = inbox_local_ + (inbox_slot(sequence, peer) - inbox_);
    return SignalAwait{this, reinterpret_cast<const uint64_t*>(flag), sequence, peer};
  }
  // The payload `peer` pushed for `sequence` (valid once await_push is satisfied).
  const std::byte* inbox_payload(uint64_t sequence, int peer) const {
    return inbox_local_ + (inbox_slot(sequence, peer) - inbox_) + 8;
  }
  // Broadcast stream: after the parity slots, every member has kStreamSlots slots per sender of
  // a flag word followed by up to kStreamBytes of payload. A sender's k-th message to a peer
  // goes to slot k mod kStreamSlots with flag k; the receiver acknowledges every
  // kStreamAckEvery messages, and the sender reuses a slot only once it was acknowledged. So a
  // root can run kStreamSlots broadcasts ahead of a receiver, as eager protocols do.
  static constexpr size_t kStreamSlots = 64;
  static constexpr size_t kStreamBytes = 512;
  static constexpr size_t kStreamStride = 576;  // 8-byte flag + payload, in whole cache lines
  static constexpr uint64_t kStreamAckEvery = kStreamSlots / 4;
  // Sender: copies `bytes` (<= kStreamBytes) into the next stream slot of `peer` and returns;
  // waits (with the team's timeout) only when the peer is kStreamSlots messages behind.
  void stream_send(int peer, const void* payload, size_t bytes);
  // Receiver: the number of the next message from `sender`, its flag, its payload, and the
  // acknowledgement once the payload has been copied out.
  uint64_t next_stream_message(int sender) { return ++stream_received_[sender]; }
  SignalAwait await_stream(int sender, uint64_t message) {
    const std::byte* flag = inbox_local_ + (stream_slot(message, sender) - inbox_);
    return SignalAwait{this, reinterpret_cast<const uint64_t*>(flag), message, sender};
  }
  const std::byte* stream_payload(int sender, uint64_t message) const {
    return inbox_local_ + (stream_slot(message, sender) - inbox_) + 8;
  }
  void stream_consumed(int sender, uint64_t message) {
    if (message % kStreamAckEvery == 0) notify(sender, kStreamAck, kStreamAckEvery);
  }

  // Root: `sequence` went to `peer` as a broadcast, acknowledged later with kBroadcastAck.
  void pushed_broadcast(int peer, uint64_t sequence) { unacked_[peer].push_back(sequence); }

  // Drives `task` to completion, then its closing unless eager(): progresses the transport
  // while it waits and ends in a Timeout naming the operation, this rank, the peer and the
  // counts when the team's limit passes.
  void run(CollTask& task, std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  // Advances `task` once without blocking (progressing the transport); true when it and its
  // closing are complete.
  bool poll(CollTask& task);
  std::string describe_wait(const SignalAwait& wait) const;

  std::byte* local(size_t offset) { return team_.local_ptr(offset); }
  // `bytes` of `peer`'s window at `offset`: a direct pointer where mapped, otherwise fetched
  // into `fallback` (which must hold `bytes`) and completed before returning.
  const std::byte* read(int peer, size_t offset, size_t bytes, std::byte* fallback);
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
  std::string describe_closing() const;
  uint32_t slot(const SignalKind& kind, int sender) const {
    return kind.index() * static_cast<uint32_t>(size_) + static_cast<uint32_t>(sender);
  }

  // Stores `bytes` of payload and then `flag` into the slot at window offset `slot` of `peer`:
  // direct stores where mapped, else UCX put, fence, put from `outbox` at `outbox_offset` (grown
  // to `outbox_bytes` on first use), a private copy the caller keeps until the peer has read it.
  void write_slot(int peer, size_t slot, uint64_t flag, const void* payload, size_t bytes,
                  std::vector<std::byte>& outbox, size_t outbox_bytes, size_t outbox_offset);
  size_t stream_slot(uint64_t message, int sender) const {
    return inbox_ + 2 * kInboxStride * static_cast<size_t>(size_) +
           (static_cast<size_t>(sender) * kStreamSlots + message % kStreamSlots) * kStreamStride;
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
  size_t inbox_ = SIZE_MAX;
  std::byte* inbox_local_ = nullptr;      // this member's inbox buffer
  std::vector<std::byte*> mapped_inbox_;  // each peer's inbox buffer where mapped, else null
  uint64_t inbox_sequence_ = 0;
  std::vector<std::byte> outbox_;              // sources of pushes over UCX, by parity and peer
  std::vector<std::deque<uint64_t>> unacked_;  // per peer: broadcast sequences not yet acked
  std::vector<uint64_t> acks_seen_;            // per peer: kBroadcastAck signals accounted for
  std::vector<uint64_t> finished_;             // per peer: sequence it is known to have finished
  std::vector<uint64_t> stream_sent_;          // per peer: stream messages sent to it
  std::vector<uint64_t> stream_received_;      // per peer: stream messages taken from it
  std::vector<std::byte> stream_outbox_;       // sources of stream puts over UCX, by peer
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
