// ChipLink (see chip_link.h). The thread driving the chips.
#include "runtime/chip_link.h"

#include <cstring>

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
      outbox_(kRingSlots * kDescStride) {}

void ChipLink::post(std::shared_ptr<TaskState> task, size_t member) {
  const uint64_t slot = posted_++ % kRingSlots;
  idle_.store(false, std::memory_order_relaxed);
  const size_t bytes = encode_task(*task, member, outbox(slot));
  in_flight_[slot] = std::move(task);
  put_slot(slot, bytes);
}

void ChipLink::put_slot(uint64_t slot, size_t bytes) {
  team_.put(chip_ + 1, ring_ + slot * kDescStride, outbox(slot), bytes);
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
