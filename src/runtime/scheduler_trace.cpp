// The scheduler's observability: spans of finished tasks, the Chrome trace-event file written
// after every run (RANKFLOW_TRACE), and the Graphviz dump of a run's graph. record_span runs on
// the scheduler and sub-worker threads, the rest on the host's main thread.
#include <fstream>

#include "rankflow/error.h"
#include "runtime/scheduler.h"
#include "runtime/worker_impl.h"

namespace rankflow::runtime {

void Scheduler::record_span(const TaskState& task, int track, uint64_t start_ns, uint64_t end_ns,
                            bool ok) {
  if (trace_path_.empty()) return;
  std::lock_guard lock(mutex_);
  spans_.push_back({task.id, task.name, track, start_ns, end_ns, task.deps, ok});
}

// Chrome trace-event JSON (mutex_ held): one "complete" event per span, tracks named after the
// chip workers and sub-workers, dependencies in each event's args.
void Scheduler::write_trace() {
  std::ofstream out(trace_path_);
  if (!out) throw InvalidArgument("RANKFLOW_TRACE: cannot write '" + trace_path_ + "'");
  out << "{\"traceEvents\": [\n";
  uint64_t origin = UINT64_MAX;
  for (const Span& s : spans_)
    origin = std::min(origin, s.start_ns);
  bool first = true;
  auto separator = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int c = 0; c < chips_; ++c) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " << c
        << ", \"args\": {\"name\": \"chip worker " << c << " (rank " << c + 1 << ")\"}}";
  }
  for (int k = 0; k < worker_.options().num_sub_workers; ++k) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " << 1000 + k
        << ", \"args\": {\"name\": \"host sub-worker " << k << "\"}}";
  }
  for (const Span& s : spans_) {
    separator();
    const int tid = s.track >= 0 ? s.track : 1000 + (-1 - s.track);
    const double ts = (static_cast<double>(s.start_ns) - static_cast<double>(origin)) / 1000.0;
    const double dur = static_cast<double>(s.end_ns - std::min(s.end_ns, s.start_ns)) / 1000.0;
    out << "{\"ph\": \"X\", \"name\": \"" << s.name << "\", \"pid\": 0, \"tid\": " << tid
        << ", \"ts\": " << ts << ", \"dur\": " << dur << ", \"args\": {\"task\": " << s.task
        << ", \"ok\": " << (s.ok ? "true" : "false") << ", \"deps\": [";
    for (size_t i = 0; i < s.deps.size(); ++i)
      out << (i ? ", " : "") << s.deps[i];
    out << "]}}";
  }
  out << "\n]}\n";
}

void Scheduler::dump_dot(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InvalidArgument("dump_dot: cannot write '" + path + "'");
  std::lock_guard lock(mutex_);
  out << "digraph rankflow_run {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const auto& t : run_tasks_) {
    std::string where = t->sub ? "host sub-worker" : "chip ";
    if (!t->sub) {
      for (size_t m = 0; m < t->workers.size(); ++m) {
        if (m > 0) where.push_back(',');
        where.append(std::to_string(t->workers[m]));
      }
    }
    const char* status = t->status == TaskStatus::kSucceeded ? "done"
                         : t->status == TaskStatus::kFailed  ? "failed"
                         : t->status == TaskStatus::kSkipped ? "skipped"
                                                             : "pending";
    out << "  t" << t->id << " [label=\"" << t->id << ": " << t->name << "\\n"
        << where << "\\n"
        << status << "\"" << (t->workers.size() > 1 ? ", style=bold" : "") << "];\n";
    for (uint64_t d : t->deps)
      out << "  t" << d << " -> t" << t->id << ";\n";
  }
  out << "}\n";
}

}  // namespace rankflow::runtime
