// PushInbox (see inbox.h): the wait for acknowledgements that slot reuse needs.
#include "collectives/inbox.h"

#include <string>
#include <utility>

#include "rankflow/error.h"

namespace rankflow::coll {

const SignalKind kBroadcastAck("inbox.broadcast_ack");

PushInbox::PushInbox(Team team, size_t region, const SignalKind& ack)
    : team_(std::move(team)),
      rank_(team_.rank()),
      size_(team_.size()),
      region_(region),
      ack_base_(ack.index() * static_cast<uint32_t>(size_)),
      payload_bytes_(payload_bytes(size_)),
      stride_(stride(size_)),
      writer_(team_, region, region_bytes(size_)),
      unacked_(static_cast<size_t>(size_)),
      acks_seen_(static_cast<size_t>(size_), 0),
      finished_(static_cast<size_t>(size_), 0) {
  if (!present()) return;
  if (region_ + region_bytes(size_) > team_.window_bytes())
    throw InvalidArgument("push inbox at offset " + std::to_string(region_) + " needs " +
                          std::to_string(region_bytes(size_)) + " bytes of a " +
                          std::to_string(team_.window_bytes()) + "-byte window");
  local_ = team_.local_ptr(region_);
}

void PushInbox::too_big(size_t bytes) const {
  throw InvalidArgument(std::string(operation_) + ": " + std::to_string(bytes) +
                        " bytes do not fit a push inbox slot of " + std::to_string(payload_bytes_));
}

void PushInbox::await_slot_free(int peer, uint64_t sequence) {
  const size_t p = static_cast<size_t>(peer);
  auto& unacked = unacked_[p];
  const uint32_t ack = ack_base_ + static_cast<uint32_t>(peer);
  while (!unacked.empty() && unacked.front() <= finished_[p]) {  // its ack is due anyway
    ++acks_seen_[p];
    unacked.pop_front();
  }
  while (sequence > 2 && finished_[p] < sequence - 2) {
    if (unacked.empty()) {
      throw InvalidState(std::string(operation_) + ": rank " + std::to_string(rank_) +
                         " cannot tell whether peer " + std::to_string(peer) +
                         " has read inbox sequence " + std::to_string(sequence - 2));
    }
    const uint64_t target = ++acks_seen_[p];
    team_.wait_until([&] { return team_.signal_value(ack) >= target; },
                     [&] {
                       return std::string(operation_) + ": rank " + std::to_string(rank_) +
                              " waited for peer " + std::to_string(peer) + " to read broadcast " +
                              std::to_string(unacked.front()) + " before reusing its inbox slot";
                     });
    finished_[p] = std::max(finished_[p], unacked.front());
    unacked.pop_front();
  }
}

}  // namespace rankflow::coll
