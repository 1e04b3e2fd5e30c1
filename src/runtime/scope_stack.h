// ScopeStack: the open scopes of the run being built (Orchestrator::scope_begin / scope_end,
// as the reference's scopes) and the intermediates whose scope has ended, waiting for their
// last users. An alloc intermediate made inside a scope dies with it: at scope_end no later
// task may name it, and its memory returns to the arena as soon as every task that named it
// has finished, even while the body still holds its Tensor. Host main thread (the body).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rankflow/error.h"
#include "runtime/host_memory.h"
#include "runtime/task_graph.h"

namespace rankflow::runtime {

class ScopeStack {
 public:
  static constexpr size_t kMaxDepth = 64;  // as the reference

  void begin() {
    if (open_.size() == kMaxDepth) {
      throw InvalidState("scope_begin: " + std::to_string(kMaxDepth) +
                         " scopes are open already (the most that nest)");
    }
    open_.emplace_back();
  }
  // Ends the innermost scope: its intermediates are named by no later task and wait for the
  // tasks that named them.
  void end(TaskGraph& graph, HostMemory& host) {
    if (open_.empty()) throw InvalidState("scope_end: no scope is open");
    for (uint64_t buffer : open_.back()) {
      if (!host.end_scope(buffer)) continue;  // gone already (its last Tensor was dropped)
      ended_.push_back({buffer, graph.unfinished_users(buffer)});
    }
    open_.pop_back();
  }
  void note_alloc(uint64_t buffer) {
    if (!open_.empty()) open_.back().push_back(buffer);
  }
  size_t depth() const { return open_.size(); }
  // Frees the intermediates of ended scopes whose users have all finished; forget(buffer) for
  // each.
  template <typename Forget>
  void reclaim(TaskGraph& graph, HostMemory& host, Forget&& forget) {
    if (ended_.empty()) return;
    std::erase_if(ended_, [&](const Ended& e) {
      if (!graph.all_finished(e.users)) return false;
      if (host.release_now(e.buffer)) forget(e.buffer);
      return true;
    });
  }
  // Whether an ended scope's intermediate can be freed now (alloc waits for that too).
  bool any_reclaimable(TaskGraph& graph) const {
    for (const Ended& e : ended_) {
      if (graph.all_finished(e.users)) return true;
    }
    return false;
  }
  // The body returned: scopes it left open end with their run (its memory goes then).
  void body_ended() { open_.clear(); }

 private:
  struct Ended {
    uint64_t buffer;
    std::vector<uint64_t> users;  // unfinished at scope_end
  };
  std::vector<std::vector<uint64_t>> open_;  // per open scope: its intermediates
  std::vector<Ended> ended_;
};

}  // namespace rankflow::runtime
