// CollContext (see coll_context.h).
#include "collectives/coll_context.h"

#include "collectives/collective.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include "rankflow/error.h"

namespace rankflow::coll {

namespace {

// The window offset of the team's "inbox" buffer when it holds both protocols, else SIZE_MAX
// (a team without an inbox: algorithms use their read-based paths).
size_t inbox_region(const Team& team) {
  try {
    if (team.bytes("inbox") >= CollContext::inbox_buffer_bytes(team.size()))
      return team.offset("inbox");
  } catch (const InvalidArgument&) {
  }
  return SIZE_MAX;
}

// Each broadcast stream's acknowledgements: a kind of their own (kBroadcastStreams order).
const SignalKind kSmallStreamAck("stream.ack.small");
const SignalKind kPairStreamAck("stream.ack.pair");
const std::array<const SignalKind*, CollContext::kBroadcastStreams.size()> kStreamAcks{
    &kSmallStreamAck, &kPairStreamAck, &kStreamAck};

std::vector<AckedStream> broadcast_streams(const Team& team) {
  const size_t inbox = inbox_region(team);
  std::vector<AckedStream> streams;
  streams.reserve(CollContext::kBroadcastStreams.size());
  for (size_t tier = 0; tier < CollContext::kBroadcastStreams.size(); ++tier) {
    const size_t region = inbox == SIZE_MAX
                              ? SIZE_MAX
                              : inbox + CollContext::broadcast_stream_start(team.size(), tier);
    streams.emplace_back(team, region, CollContext::kBroadcastStreams[tier], *kStreamAcks[tier]);
  }
  return streams;
}

}  // namespace

CollContext::CollContext(Team team)
    : team_(std::move(team)),
      rank_(team_.rank()),
      size_(team_.size()),
      eager_(team_.mapped_everywhere()),
      inbox_(team_, inbox_region(team_)),
      streams_(broadcast_streams(team_)) {
  if (team_.signal_slots() < signal_slots_for(size_)) {
    throw InvalidArgument("collective team needs " + std::to_string(signal_slots_for(size_)) +
                          " signal slots, has " + std::to_string(team_.signal_slots()));
  }
  consumed_.assign(signal_slots_for(size_), 0);
}

SignalAwait CollContext::await_word(size_t offset, uint64_t target, int peer) {
  return SignalAwait{reinterpret_cast<const uint64_t*>(local(offset)), target, peer};
}

void CollContext::notify(int peer, const SignalKind& kind, uint64_t count) {
  team_.signal(peer, slot(kind, rank_), count);
}

SignalAwait CollContext::await(int peer, const SignalKind& kind) {
  const uint32_t s = slot(kind, peer);
  return SignalAwait{team_.signal_word(s), ++consumed_[s], peer};
}

bool SignalAwait::satisfied() const {
  for (uint32_t line = 0; line < fetch_lines; ++line)
    __builtin_prefetch(fetch + 64 * static_cast<size_t>(line), 0, 3);
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(word)).load(std::memory_order_acquire) >=
         target;
}

namespace {

// A few free coroutine frames per thread, each with its capacity in a header.
struct FrameCache {
  static constexpr int kSlots = 4;
  void* frames[kSlots] = {};
  ~FrameCache() {
    for (void* frame : frames)
      ::operator delete(frame);
  }
};
thread_local FrameCache frame_cache;
constexpr std::size_t kFrameHeader = 16;

}  // namespace

void* CollTask::promise_type::operator new(std::size_t bytes) {
  for (void*& frame : frame_cache.frames) {
    if (frame != nullptr && *static_cast<std::size_t*>(frame) >= bytes) {
      void* reused = std::exchange(frame, nullptr);
      return static_cast<std::byte*>(reused) + kFrameHeader;
    }
  }
  void* block = ::operator new(bytes + kFrameHeader);
  *static_cast<std::size_t*>(block) = bytes;
  return static_cast<std::byte*>(block) + kFrameHeader;
}

void CollTask::promise_type::operator delete(void* frame, std::size_t) {
  void* block = static_cast<std::byte*>(frame) - kFrameHeader;
  for (void*& slot : frame_cache.frames) {
    if (slot == nullptr) {
      slot = block;
      return;
    }
  }
  ::operator delete(block);
}

bool CollTask::advance() {
  while (!done()) {
    const SignalAwait* waiting = handle_.promise().waiting;
    if (waiting != nullptr && !waiting->satisfied()) return false;
    handle_.promise().waiting = nullptr;
    handle_.resume();
    if (handle_.promise().error) std::rethrow_exception(std::exchange(handle_.promise().error, {}));
  }
  return true;
}

bool CollContext::poll(CollTask& task) {
  if (!task.advance()) {
    team_.progress();
    if (!task.advance()) return false;
  }
  return eager_ || close_step();
}

void CollContext::run(CollTask& task, std::chrono::nanoseconds timeout) {
  // A wait, with a back-off of its own, for each signal the task suspends on: a wait that
  // yielded or slept for a late peer must not leave the task's later waits, which the peers
  // answer at once, polling at the yielding or sleeping rate (a probe of the members' round trip
  // read about 1 ms a lap after a first wait of milliseconds, 160-220 ns otherwise). The wait
  // ends where the task finishes or suspends on another signal; a task that suspends once
  // waits once, as before.
  bool finished = task.advance();
  while (!finished) {
    const SignalAwait before = task.waiting();  // what it waits for (the awaiter may be reused)
    team_.wait_until(
        [&] {
          finished = task.advance();
          if (finished) return true;
          const SignalAwait& now = task.waiting();
          return now.word != before.word || now.target != before.target;
        },
        [&] { return describe_wait(task.waiting(), timeout); }, timeout);
  }
  if (!eager_) {  // wait_until tries once before it waits
    team_.wait_until([&] { return close_step(); }, [&] { return describe_closing(timeout); },
                     timeout);
  }
}

bool CollContext::close_step() {
  if (!closing_flushed_) {
    if (!team_.try_flush()) return false;
    closing_flushed_ = true;
    closing_ = barrier_mesh(*this);
  }
  if (!closing_.advance()) {
    team_.progress();
    if (!closing_.advance()) return false;
  }
  closing_ = CollTask();
  closing_flushed_ = false;
  return true;
}

std::string CollContext::describe_closing(std::chrono::nanoseconds waited) const {
  if (!closing_flushed_) {
    return std::string(operation_) + ": rank " + std::to_string(rank_) + " of " +
           std::to_string(size_) +
           " finished, but its transfers did not complete: a peer stopped progressing";
  }
  return describe_wait(closing_.waiting(), waited) + " (closing barrier after the collective)";
}

std::string CollContext::describe_wait(const SignalAwait& wait,
                                       std::chrono::nanoseconds limit) const {
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%g s",
                std::chrono::duration<double>(limit.count() > 0 ? limit : team_.timeout()).count());
  const std::string who = std::string(operation_) + ": rank " + std::to_string(rank_) + " of " +
                          std::to_string(size_) + " waited " + waited;
  if (wait.word == nullptr) return who + " (no wait pending)";
  return who + " for peer " + std::to_string(wait.peer) + ": word at offset " +
         std::to_string(reinterpret_cast<const std::byte*>(wait.word) -
                        const_cast<Team&>(team_).local_ptr(0)) +
         " expected >= " + std::to_string(wait.target) + ", observed " +
         std::to_string(std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(wait.word)).load());
}

void CollContext::notify_all(const SignalKind& kind) {
  for (int d = 1; d < size_; ++d)
    notify(peer(d), kind);
}

const std::byte* CollContext::read(int peer, size_t offset, size_t bytes, std::byte* fallback) {
  if (peer == rank_) return local(offset);
  if (const void* mapped = team_.remote_ptr(peer, offset)) {
    team_.remote_ptr(peer, offset + bytes);  // bounds check of the whole range
    return static_cast<const std::byte*>(mapped);
  }
  team_.get(peer, offset, fallback, bytes);
  team_.flush(peer);
  return fallback;
}

void CollContext::fetch(int peer, size_t offset, void* dst, size_t bytes) {
  if (peer == rank_) {
    std::memmove(dst, local(offset), bytes);
  } else {
    team_.get(peer, offset, dst, bytes);
  }
}

std::byte* CollContext::grow(std::vector<std::byte>& area, size_t bytes) {
  if (area.size() < bytes) area.resize(bytes);
  return area.data();
}

}  // namespace rankflow::coll
