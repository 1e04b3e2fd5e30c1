// ChipLink (see chip_link.h). The thread driving the chips.
#include "runtime/chip_link.h"

#include <cstring>

#include "rankflow/error.h"

namespace rankflow::runtime {

ChipLink::ChipLink(Team& team, int chip, bool shares_core)
    : team_(team),
      chip_(chip),
      shares_core_(shares_core),
      ring_(team.offset("ring")),
      completions_(team.offset("completions") +
                   static_cast<size_t>(chip) * kRingSlots * kCompletionStride),
      done_(done_counter(team, chip)),
      posted_counter_(team, chip + 1, posted_counter(team)),
      in_flight_(kRingSlots),
      mapped_ring_(static_cast<std::byte*>(team.remote_ptr(chip + 1, ring_))),
      unmapped_slots_(mapped_ring_ != nullptr ? 0 : kRingSlots * kDescStride) {}

void ChipLink::post(std::shared_ptr<TaskState> task, size_t member) {
  const uint32_t deps = ring_deps(*task, posted_ + 1);  // may throw: before a slot is claimed
  const uint64_t slot = posted_++ % kRingSlots;
  idle_.store(false, std::memory_order_relaxed);
  const size_t bytes = encode_task(*task, member, descriptor_slot(slot), deps);
  in_flight_[slot] = std::move(task);
  send([&] { put_slot(slot, bytes); });  // lost: it stays in flight, and the run stalls
}

// The streamed predecessors still unfinished, as DescHeader::ring_deps of the descriptor that
// takes ring place `sequence`; records that place. They were posted here before (the chip's
// FIFO), and are still in flight, so each lies fewer than kRingSlots places back.
uint32_t ChipLink::ring_deps(TaskState& task, uint64_t sequence) {
  uint32_t deps = 0;
  for (const auto& before : task.stream.before) {
    if (terminal(before->status.load(std::memory_order_relaxed))) continue;  // it succeeded
    const uint64_t back = sequence - before->stream.sequence;
    if (before->stream.sequence == 0 || back == 0 || back >= kRingSlots) {
      throw InvalidState("chip link " + std::to_string(chip_) + ": task " +
                         std::to_string(task.id) + " follows task " + std::to_string(before->id) +
                         ", which is not in flight on this chip");
    }
    deps |= 1u << (back - 1);
  }
  task.stream.before.clear();
  task.stream.sequence = sequence;
  return deps;
}

void ChipLink::put_slot(uint64_t slot, size_t bytes) {
  if (mapped_ring_ == nullptr)
    team_.put(chip_ + 1, ring_ + slot * kDescStride, descriptor_slot(slot), bytes);
  posted_counter_.advance();
}

Completion ChipLink::read_completion(uint64_t slot) const {
  Completion record;
  const std::byte* arrived = team_.local_ptr(completions_ + slot * kCompletionStride);
  std::memcpy(&record, arrived, offsetof(Completion, message));
  record.message[0] = '\0';
  if (!record.ok) {
    std::memcpy(record.message, arrived + offsetof(Completion, message), kMessageBytes);
    record.message[kMessageBytes - 1] = '\0';
  }
  return record;
}

const TaskState* ChipLink::oldest_in_flight() const {
  if (idle()) return nullptr;
  return in_flight_[completed_ % kRingSlots].get();
}

}  // namespace rankflow::runtime
