// ChipLink: the host's end of one chip's rings. It posts descriptors into the chip's ring
// (encoded straight into the ring where the chip's window is mapped, else into a private slot
// that is then put; a signal then bumps the chip's posted counter), reads
// the completion records the chip writes into the host's window, keeps which task occupies each
// slot, and ends a run with a marker. Used only by the thread that drives the chips (see
// dispatcher.h), which serialises every call.
//
// A transfer to the chip that fails (a TransportError or Timeout from UCX: its process died and
// the connection broke, as under UCX_TLS=tcp,self) marks the link lost: nothing more is sent
// to the chip, its tasks stay in flight (no completion will come), and why_lost() says why, for
// the run's stall message. Over mapped memory a dead chip's stores and loads never fail: only the
// run's timeout finds it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rankflow/error.h"
#include "rankflow/team.h"
#include "runtime/counter.h"
#include "runtime/protocol.h"
#include "runtime/task.h"
#include "runtime/task_codec.h"

namespace rankflow::runtime {

class ChipLink {
 public:
  // `shares_core`: the chip is bound to the host's own core (more ranks than cores).
  ChipLink(Team& team, int chip, bool shares_core);

  int chip() const { return chip_; }
  bool shares_core() const { return shares_core_; }
  uint32_t room() const { return kRingSlots - static_cast<uint32_t>(posted_ - completed_); }
  // Whether nothing is in flight: a hint any thread may read (how long a waiter spins).
  bool idle() const { return idle_.load(std::memory_order_relaxed); }
  // Posts member `member` of `task` into the next slot (room() > 0).
  void post(std::shared_ptr<TaskState> task, size_t member);
  // Posts the end-of-run marker once a slot is free (collecting completions meanwhile); none
  // to a lost chip.
  template <typename OnDone>
  void post_end_of_run(OnDone&& on_done);
  // Reads every completion that arrived: on_done(task, ok, record) for each task (end-of-run
  // acknowledgements carry no task). The records themselves are read only when a task failed
  // or `want_records` (spans for the trace); otherwise `record` is null. True if any arrived.
  template <typename OnDone>
  bool collect(OnDone&& on_done, bool want_records);
  // Tells the chip the host is alive (its wait for the next task restarts its deadline).
  void beat() {
    send([&] { team_.signal(chip_ + 1, kHeartbeatSignal); });
  }
  // Tells the chip the host has begun closing the worker (see ChipService::wait_for_close).
  void announce_close() {
    send([&] { team_.signal(chip_ + 1, kClosingSignal); });
  }
  // The task in the oldest occupied slot, or null.
  const TaskState* oldest_in_flight() const;
  // Whether a transfer to the chip failed, and why: written once by the driver, then published,
  // so any thread may read it (a stall message).
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  const std::string& why_lost() const { return why_lost_; }

 private:
  // Where slot `slot`'s descriptor is encoded: straight into the chip's ring where its window
  // is mapped (the posted counter's release store then publishes it), else a private slot that
  // put_slot() puts.
  std::byte* descriptor_slot(uint64_t slot) {
    return (mapped_ring_ != nullptr ? mapped_ring_ : unmapped_slots_.data()) + slot * kDescStride;
  }
  void put_slot(uint64_t slot, size_t bytes);
  // Runs `transfer` unless the link is lost; a transfer that fails loses it.
  template <typename Transfer>
  void send(Transfer&& transfer);
  uint32_t ring_deps(TaskState& task, uint64_t sequence);
  Completion read_completion(uint64_t slot) const;

  Team& team_;
  int chip_;
  bool shares_core_;
  size_t ring_;         // the ring's offset in every window
  size_t completions_;  // this chip's completion records in the host's window
  size_t done_;         // this chip's completion counter in the host's window (then failures)
  uint64_t failed_seen_ = 0;
  CounterWriter posted_counter_;                       // descriptors posted, in the chip's window
  std::vector<std::shared_ptr<TaskState>> in_flight_;  // by slot
  std::byte* mapped_ring_;                             // the chip's ring, or null
  std::vector<std::byte> unmapped_slots_;              // kRingSlots descriptors, by slot
  uint64_t posted_ = 0;
  uint64_t completed_ = 0;
  std::atomic<bool> idle_{true};  // posted_ == completed_, published for idle()
  std::atomic<bool> lost_{false};
  std::string why_lost_;  // set before lost_
};

template <typename Transfer>
void ChipLink::send(Transfer&& transfer) {
  if (lost_.load(std::memory_order_relaxed)) return;
  try {
    transfer();
    return;
  } catch (const TransportError& e) {
    why_lost_ = e.what();
  } catch (const Timeout& e) {
    why_lost_ = e.what();
  }
  lost_.store(true, std::memory_order_release);
}

template <typename OnDone>
bool ChipLink::collect(OnDone&& on_done, bool want_records) {
  const uint64_t arrived = read_counter(team_, done_);
  if (completed_ == arrived) return false;
  // The chip counts a failure before the completion, so `failed` may already include one
  // beyond `arrived`: only the failures found in the records read are accounted for, and the
  // rest makes the next batch read its records too.
  const uint64_t failed = read_counter(team_, done_ + sizeof(uint64_t));
  const bool read_records = want_records || failed != failed_seen_;
  while (completed_ < arrived) {
    const uint64_t slot = completed_ % kRingSlots;
    std::shared_ptr<TaskState> task = std::move(in_flight_[slot]);
    ++completed_;
    if (!read_records) {
      if (task) on_done(task, true, nullptr);
      continue;
    }
    const Completion record = read_completion(slot);
    failed_seen_ += record.ok == 0;
    if (task) on_done(task, record.ok != 0, &record);  // no task: an end-of-run marker's ack
  }
  idle_.store(posted_ == completed_, std::memory_order_relaxed);
  return true;
}

template <typename OnDone>
void ChipLink::post_end_of_run(OnDone&& on_done) {
  if (lost()) return;  // nothing reaches it
  team_.wait_until(
      [&] {
        collect(on_done, false);
        return room() > 0;
      },
      [&] {
        return "end of run: chip worker " + std::to_string(chip_) + " (rank " +
               std::to_string(chip_ + 1) + ") has not acknowledged earlier descriptors";
      });
  const uint64_t slot = posted_++ % kRingSlots;
  idle_.store(false, std::memory_order_relaxed);
  in_flight_[slot] = nullptr;
  const size_t bytes = encode_end_of_run(descriptor_slot(slot));
  send([&] { put_slot(slot, bytes); });
}

}  // namespace rankflow::runtime
