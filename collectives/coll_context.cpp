// CollContext (see coll_context.h).
#include "collectives/coll_context.h"

#include <chrono>
#include <cstdio>
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

SignalAwait CollContext::await(int peer, Purpose purpose) {
  const uint32_t s = slot(purpose, peer);
  return SignalAwait{this, s, ++consumed_[s], peer};
}

bool SignalAwait::satisfied() const {
  return context->signal_value(slot) >= target;
}

bool CollTask::advance() {
  while (!done()) {
    if (handle_.promise().waiting.context != nullptr && !handle_.promise().waiting.satisfied()) {
      return false;
    }
    handle_.promise().waiting.context = nullptr;
    handle_.resume();
    if (handle_.promise().error) std::rethrow_exception(std::exchange(handle_.promise().error, {}));
  }
  return true;
}

bool CollContext::poll(CollTask& task) {
  if (task.advance()) return true;
  team_.progress();
  return task.advance();
}

void CollContext::run(CollTask& task, std::chrono::nanoseconds timeout) {
  if (task.advance()) return;
  team_.wait_until([&] { return task.advance(); }, [&] { return describe_wait(task.waiting()); },
                   timeout);
}

std::string CollContext::describe_wait(const SignalAwait& wait) const {
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%g s",
                std::chrono::duration<double>(team_.timeout()).count());
  return operation_ + ": rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
         " waited " + waited + " for peer " + std::to_string(wait.peer) + ": signal " +
         std::to_string(wait.slot) + " expected >= " + std::to_string(wait.target) + ", observed " +
         std::to_string(team_.signal_value(wait.slot));
}

void CollContext::notify_all(Purpose purpose) {
  for (int d = 1; d < size_; ++d)
    notify(peer(d), purpose);
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
