// TraceWriter (see trace_writer.h).
#include "runtime/trace_writer.h"

#include <algorithm>
#include <fstream>

#include "rankflow/error.h"

namespace rankflow::runtime {

void TraceWriter::task_left(const TaskState& task, const TaskSpan& span) {
  std::lock_guard lock(mutex_);
  spans_.push_back({task.id, std::string(task.name), span, task.deps});
}

void TraceWriter::run_ended(uint64_t) {
  std::lock_guard lock(mutex_);
  write();
}

// Chrome trace-event JSON (mutex_ held): one "complete" event per span, tracks named after the
// chip workers and sub-workers, dependencies in each event's args.
void TraceWriter::write() const {
  std::ofstream out(path_);
  if (!out) throw InvalidArgument("RANKFLOW_TRACE: cannot write '" + path_ + "'");
  out << "{\"traceEvents\": [\n";
  uint64_t origin = UINT64_MAX;
  for (const Span& s : spans_)
    origin = std::min(origin, s.where.start_ns);
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
  for (int k = 0; k < sub_workers_; ++k) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " << 1000 + k
        << ", \"args\": {\"name\": \"host sub-worker " << k << "\"}}";
  }
  for (const Span& s : spans_) {
    separator();
    const TaskSpan& w = s.where;
    const int tid = w.track >= 0 ? w.track : 1000 + (-1 - w.track);
    const double ts = (static_cast<double>(w.start_ns) - static_cast<double>(origin)) / 1000.0;
    const double dur = static_cast<double>(w.end_ns - std::min(w.end_ns, w.start_ns)) / 1000.0;
    out << "{\"ph\": \"X\", \"name\": \"" << s.name << "\", \"pid\": 0, \"tid\": " << tid
        << ", \"ts\": " << ts << ", \"dur\": " << dur << ", \"args\": {\"task\": " << s.task
        << ", \"ok\": " << (w.ok ? "true" : "false") << ", \"deps\": [";
    for (size_t i = 0; i < s.deps.size(); ++i)
      out << (i ? ", " : "") << s.deps[i];
    out << "]}}";
  }
  out << "\n]}\n";
}

}  // namespace rankflow::runtime
