// AckedStream (see stream.h): the shape's checks, the sender's credit read again from a peer's
// acknowledgements once used up, and the wait for it when a sender is a full stream ahead.
#include "collectives/stream.h"

#include <string>
#include <utility>

#include "rankflow/error.h"

namespace rankflow::coll {

const SignalKind kStreamAck("stream.ack");

namespace {

bool power_of_two(uint64_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

}  // namespace

AckedStream::AckedStream(Team team, size_t region, StreamShape shape, const SignalKind& ack)
    : team_(std::move(team)),
      rank_(team_.rank()),
      size_(team_.size()),
      region_(region),
      shape_(shape),
      stride_(shape.stride()),
      ack_base_(ack.index() * static_cast<uint32_t>(size_)),
      writer_(team_, region, shape.region_bytes(size_)),
      sent_(static_cast<size_t>(size_), 0),
      credit_(static_cast<size_t>(size_), shape.slots),
      received_(static_cast<size_t>(size_), 0) {
  if (!power_of_two(shape_.slots) || !power_of_two(shape_.ack_every) ||
      shape_.ack_every > shape_.slots || shape_.payload_bytes == 0) {
    throw InvalidArgument("stream shape of " + std::to_string(shape_.slots) + " slots of " +
                          std::to_string(shape_.payload_bytes) + " bytes acknowledged every " +
                          std::to_string(shape_.ack_every) +
                          ": slots and ack_every must be powers of two, ack_every <= slots, "
                          "payload_bytes > 0");
  }
  if (!present()) return;
  if (region_ + shape_.region_bytes(size_) > team_.window_bytes())
    throw InvalidArgument("stream at offset " + std::to_string(region_) + " needs " +
                          std::to_string(shape_.region_bytes(size_)) + " bytes of a " +
                          std::to_string(team_.window_bytes()) + "-byte window");
  local_ = team_.local_ptr(region_);
}

void AckedStream::too_big(size_t bytes) const {
  throw InvalidArgument(std::string(operation_) + ": " + std::to_string(bytes) +
                        " bytes do not fit a stream slot of " +
                        std::to_string(shape_.payload_bytes));
}

void AckedStream::refresh_credit(int peer, uint64_t message) {
  const uint32_t ack = ack_slot(peer);
  if (team_.signal_value(ack) + shape_.slots < message) await_credit(peer, message);
  credit_[static_cast<size_t>(peer)] = team_.signal_value(ack) + shape_.slots;
}

void AckedStream::await_credit(int peer, uint64_t message) {
  const uint64_t read_before = message - shape_.slots;
  const uint32_t ack = ack_slot(peer);
  team_.wait_until([&] { return team_.signal_value(ack) >= read_before; },
                   [&] {
                     return std::string(operation_) + ": rank " + std::to_string(rank_) +
                            " waited for peer " + std::to_string(peer) +
                            " to read streamed message " + std::to_string(read_before) +
                            " before reusing its slot";
                   });
}

}  // namespace rankflow::coll
