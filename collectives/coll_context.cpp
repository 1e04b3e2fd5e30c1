// CollContext (see coll_context.h).
#include "collectives/coll_context.h"

#include <cstring>

#include "rankflow/error.h"

namespace rankflow::coll {

CollContext::CollContext(Team team)
    : team_(std::move(team)), rank_(team_.rank()), size_(team_.size()) {
  if (team_.signal_slots() < signal_slots_for(size_)) {
    throw InvalidArgument("collective team needs " + std::to_string(signal_slots_for(size_)) +
                          " signal slots, has " + std::to_string(team_.signal_slots()));
  }
  consumed_.assign(signal_slots_for(size_), 0);
}

void CollContext::notify(int peer, Purpose purpose) {
  team_.signal(peer, slot(purpose, rank_));
}

void CollContext::await(int peer, Purpose purpose) {
  const uint32_t s = slot(purpose, peer);
  team_.wait_signal(s, ++consumed_[s], peer, operation_.c_str());
}

void CollContext::notify_all(Purpose purpose) {
  for (int d = 1; d < size_; ++d)
    notify(peer(d), purpose);
}

void CollContext::await_all(Purpose purpose) {
  for (int d = 1; d < size_; ++d)
    await(peer(-d), purpose);
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
