// TraceWriter: the observer behind RANKFLOW_TRACE=path.json. It keeps a span per finished task
// (or group member) of every run and, when a run ends, rewrites a Chrome trace-event file of
// all of them: one track per chip worker and sub-worker, each task with its name, start, end
// and dependencies (open it in Perfetto or chrome://tracing). task_left may come from any
// thread; the file is written on the host's main thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/observer.h"

namespace rankflow::runtime {

class TraceWriter : public TaskObserver {
 public:
  TraceWriter(std::string path, int chips, int sub_workers)
      : path_(std::move(path)), chips_(chips), sub_workers_(sub_workers) {}
  bool wants_spans() const override { return true; }
  void task_left(const TaskState& task, const TaskSpan& span) override;
  void run_ended(uint64_t run) override;

 private:
  struct Span {
    uint64_t task;
    std::string name;
    TaskSpan where;
    std::vector<uint64_t> deps;
  };
  void write() const;
  std::string path_;
  int chips_;
  int sub_workers_;
  std::mutex mutex_;
  std::vector<Span> spans_;
};

}  // namespace rankflow::runtime
