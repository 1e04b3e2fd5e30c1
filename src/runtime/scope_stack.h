// ScopeStack: the open scopes of the run being built (Orchestrator::scope_begin / scope_end,
// as the reference's scopes) and the intermediates whose scope has ended, waiting for their
// last users. An alloc intermediate made inside a scope dies with it: at scope_end no later
// task may name it, and its memory returns to the arena as soon as every task that named it
// has finished, even while the body still holds its Tensor. Host main thread (the body).
#pragma once

#include <algorithm>
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

  // Opens a scope; returns its token (unique for the worker's life).
  uint64_t begin() {
    if (open_.size() == kMaxDepth) {
      throw InvalidState("scope_begin: " + std::to_string(kMaxDepth) +
                         " scopes are open already (the most that nest)");
    }
    open_.push_back({++tokens_, {}});
    return tokens_;
  }
  // Ends the innermost scope: its intermediates are named by no later task and wait for the
  // tasks that named them.
  void end(TaskGraph& graph, HostMemory& host) {
    if (open_.empty()) throw InvalidState("scope_end: no scope is open");
    for (uint64_t buffer : open_.back().buffers) {
      if (!host.end_scope(buffer)) continue;  // gone already (its last Tensor was dropped)
      ended_.push_back({buffer, graph.unfinished_users(buffer)});
    }
    open_.pop_back();
  }
  // Ends scope `token` and any still open inside it (Orchestrator::Scope's end); nothing if it
  // ended already (by hand, or with its run).
  void end_through(uint64_t token, TaskGraph& graph, HostMemory& host) {
    const bool open =
        std::any_of(open_.begin(), open_.end(), [&](const Open& o) { return o.token == token; });
    while (open && !open_.empty()) {
      const bool last = open_.back().token == token;
      end(graph, host);
      if (last) return;
    }
  }
  void note_alloc(uint64_t buffer) {
    if (!open_.empty()) open_.back().buffers.push_back(buffer);
  }
  size_t depth() const { return open_.size(); }
  // Frees the intermediates of ended scopes whose users have all finished; forget(buffer) for
  // each.
  // Every submit reclaims: the waiting entries are looked at again only once a task finished
  // since the last look (or one joined), so a body far ahead of its run costs no rescans.
  template <typename Forget>
  void reclaim(TaskGraph& graph, HostMemory& host, Forget&& forget) {
    if (ended_.empty() || !changed(graph)) return;
    std::erase_if(ended_, [&](const Ended& e) {
      if (!graph.all_finished(e.users)) return false;
      if (host.release_now(e.buffer)) forget(e.buffer);
      return true;
    });
    looked_at_ = {graph.finished(), ended_.size()};
  }
  // Whether an ended scope's intermediate can be freed now (alloc waits for that too).
  bool any_reclaimable(TaskGraph& graph) const {
    if (!changed(graph)) return false;
    return std::any_of(ended_.begin(), ended_.end(),
                       [&](const Ended& e) { return graph.all_finished(e.users); });
  }
  // The body returned: scopes it left open end with their run (its memory goes then).
  void body_ended() { open_.clear(); }

 private:
  struct Ended {
    uint64_t buffer;
    std::vector<uint64_t> users;  // unfinished at scope_end
  };
  struct Open {
    uint64_t token;
    std::vector<uint64_t> buffers;  // its intermediates
  };
  std::vector<Open> open_;
  uint64_t tokens_ = 0;
  bool changed(const TaskGraph& graph) const {
    return graph.finished() != looked_at_.finished || ended_.size() != looked_at_.entries;
  }
  std::vector<Ended> ended_;
  struct {
    uint64_t finished = UINT64_MAX;  // TaskGraph::finished() at the last look
    size_t entries = 0;
  } looked_at_;
};

}  // namespace rankflow::runtime
