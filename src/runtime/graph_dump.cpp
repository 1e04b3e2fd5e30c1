// GraphDump (see graph_dump.h).
#include "runtime/graph_dump.h"

#include <algorithm>
#include <fstream>

#include "rankflow/error.h"

namespace rankflow::runtime {

void GraphDump::run_began(uint64_t) {
  std::lock_guard lock(mutex_);
  nodes_.clear();
  workers_.clear();
  deps_.clear();
  early_.clear();
  first_id_ = 0;
}

void GraphDump::task_submitted(const std::shared_ptr<TaskState>& task) {
  std::lock_guard lock(mutex_);
  if (nodes_.empty()) first_id_ = task->id;
  Node node{task->id, task->name,      task->sub,    static_cast<uint32_t>(task->workers.size()), 0,
            false,    workers_.size(), deps_.size(), static_cast<uint32_t>(task->deps.size())};
  workers_.insert(workers_.end(), task->workers.begin(), task->workers.end());
  deps_.insert(deps_.end(), task->deps.begin(), task->deps.end());
  for (auto it = early_.begin(); it != early_.end();) {
    if (it->first != task->id) {
      ++it;
      continue;
    }
    record_left(node, it->second);
    it = early_.erase(it);
  }
  nodes_.push_back(node);
}

void GraphDump::task_left(const TaskState& task, const TaskSpan& span) {
  std::lock_guard lock(mutex_);
  if (Node* node = node_of(task.id)) return record_left(*node, span.ok);
  early_.emplace_back(task.id, span.ok);
}

GraphDump::Node* GraphDump::node_of(uint64_t id) {
  if (nodes_.empty() || id < first_id_ || id - first_id_ >= nodes_.size()) return nullptr;
  return &nodes_[id - first_id_];
}

void GraphDump::record_left(Node& node, bool ok) {
  ++node.members_left;
  node.failed = node.failed || !ok;
}

std::vector<const char*> GraphDump::statuses() const {
  std::vector<const char*> status(nodes_.size(), "pending");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.failed) {
      status[i] = "failed";
    } else if (n.members_left >= std::max<uint32_t>(n.members, 1)) {
      status[i] = "done";
    } else if (n.members_left == 0) {
      for (uint32_t d = 0; d < n.deps; ++d) {
        const uint64_t dep = deps_[n.deps_at + d];
        if (dep < first_id_ || dep - first_id_ >= i) continue;
        const char* before = status[dep - first_id_];
        if (before[0] == 'f' || before[0] == 's') status[i] = "skipped";
      }
    }
  }
  return status;
}

void GraphDump::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw InvalidArgument("dump_dot: cannot write '" + path + "'");
  std::lock_guard lock(mutex_);
  const std::vector<const char*> status = statuses();
  out << "digraph rankflow_run {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    out << "  t" << n.id << " [label=\"" << n.id << ": " << n.name << "\\n";
    if (n.sub) {
      out << "host sub-worker";
    } else {
      out << "chip ";
      for (uint32_t m = 0; m < n.members; ++m)
        out << (m > 0 ? "," : "") << workers_[n.workers_at + m];
    }
    out << "\\n" << status[i] << "\"" << (n.members > 1 ? ", style=bold" : "") << "];\n";
    for (uint32_t d = 0; d < n.deps; ++d)
      out << "  t" << deps_[n.deps_at + d] << " -> t" << n.id << ";\n";
  }
  out << "}\n";
}

}  // namespace rankflow::runtime
