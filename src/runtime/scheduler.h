// Scheduler: the host side of a run. The orchestration body (main thread) submits tasks; the
// scheduler thread (one for the worker's lifetime, asleep when there is nothing to do) owns
// the transport while a run is active: it posts ready chip tasks to each
// chip's ring in the order they became ready (one FIFO per chip), reads completions, releases
// dependents, and hands sub tasks to the sub-worker threads. A task that fails skips every task
// that depends on it; the run's first error is rethrown when the run ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rankflow/runtime.h"
#include "runtime/dependencies.h"
#include "runtime/domains.h"
#include "runtime/protocol.h"
#include "runtime/range_allocator.h"

namespace rankflow::runtime {

class WorkerImpl;

enum class TaskStatus : int { kWaiting, kReady, kRunning, kSucceeded, kFailed, kSkipped };

struct TaskState {
  uint64_t id = 0;
  bool sub = false;
  uint32_t fn = 0;
  std::vector<int> workers;  // one per member; a single task has one; subs none
  std::vector<std::vector<TensorArg>> member_args;  // the arguments of each member
  CallConfig config;
  std::shared_ptr<const DomainDesc> domain_setup;  // an allocate_domain task's payload
  uint64_t ready_sequence = 0;  // when it became ready (orders chips' FIFOs against groups)
  std::vector<uint64_t> deps;   // the tasks it waited for (for the trace and the DOT dump)
  int members_done = 0;
  bool members_ok = true;
  std::string member_error;
  std::string name;
  int pending = 0;
  std::vector<std::shared_ptr<TaskState>> dependents;
  std::atomic<TaskStatus> status{TaskStatus::kWaiting};
  std::string error;  // written before status becomes kFailed or kSkipped
};

// Where the last copy of an Orchestrator::alloc tensor reports that nothing names its memory any
// more; the scheduler reclaims it. Shared with every lease, so a tensor that outlives the worker
// still releases harmlessly.
struct LeaseQueue {
  struct Released {
    uint64_t run;
    uint64_t buffer;
    size_t offset;
    size_t bytes;
  };
  std::mutex mutex;
  std::condition_variable released_cv;
  std::vector<Released> released;
};

class Scheduler {
 public:
  explicit Scheduler(WorkerImpl& worker);
  ~Scheduler();

  int chips() const { return chips_; }
  void begin_run();
  void dump_dot(const std::string& path);
  // Waits for every task of the run, ends the run on every chip, and rethrows the first error.
  void end_run();

  Tensor host_tensor(std::vector<size_t> shape, DType dtype);
  Tensor alloc(std::vector<size_t> shape, DType dtype);
  Tensor alloc_child(int worker, std::vector<size_t> shape, DType dtype);
  void free_child(const Tensor& base);
  // A copy between host and child memory, as a task on the child's worker.
  std::shared_ptr<TaskState> copy(const Tensor& dst, const Tensor& src, const char* what);
  // A sub task (workers empty), a single chip task (one worker) or a group (several).
  std::shared_ptr<TaskState> submit(bool sub, uint32_t fn,
                                    std::vector<std::vector<TensorArg>> member_args,
                                    std::vector<int> workers, std::vector<uint64_t> after,
                                    CallConfig config,
                                    std::shared_ptr<const DomainDesc> domain_setup = nullptr);
  // Validates, then has the members build the domain (a group task ahead of every other).
  std::shared_ptr<DomainState> allocate_domain(std::string name, std::vector<int> workers,
                                               size_t window_bytes,
                                               std::vector<BufferSpec> buffers);

 private:
  void loop();                 // the scheduler thread
  void sub_worker(int index);  // each sub-worker thread
  bool dispatch();             // posts ready chip tasks; true if it did anything
  bool collect();              // reads chip completions; true if it did anything
  void post(const TaskState& task, size_t member, uint64_t slot);
  void launch_groups(std::vector<std::tuple<std::shared_ptr<TaskState>, size_t, uint64_t>>& out);
  void member_done(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error);
  // One span of the trace: a task (or a group member) on a track.
  struct Span {
    uint64_t task;
    std::string name;
    int track;  // chip worker id, or -1 - k for sub-worker k
    uint64_t start_ns;
    uint64_t end_ns;
    std::vector<uint64_t> deps;
    bool ok;
  };
  void record_span(const TaskState& task, int track, uint64_t start_ns, uint64_t end_ns, bool ok);
  void write_trace();
  void post_end_of_run(int chip);
  void finish(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error);
  void skip_dependents(const std::shared_ptr<TaskState>& task, const std::string& why);
  void make_ready(const std::shared_ptr<TaskState>& task);
  void wait_for_drain();
  std::vector<ByteUse> uses_of(const std::vector<TensorArg>& args, const std::string& name,
                               int worker) const;
  const std::string& name_of(bool sub, uint32_t fn) const;

  // Host memory (scheduler_memory.cpp), under mutex_.
  Tensor place_host_tensor(size_t offset, std::vector<size_t> shape, DType dtype, size_t bytes);
  void reclaim_released();  // returns the memory of released orch.alloc tensors
  void release_run_memory();
  struct ChildAllocation {
    int worker;
    size_t offset;
    size_t bytes;
    bool live;
  };
  std::unordered_map<uint64_t, ChildAllocation> child_allocations_;  // by buffer id
  std::vector<RangeAllocator> child_arenas_;                         // per chip
  std::vector<uint64_t> child_pending_free_;  // freed this run, reusable after it
  // Domain arguments of one member: checked, and the creation tasks they wait for.
  void check_domain_args(const std::vector<TensorArg>& args, const std::string& name, int worker,
                         std::vector<uint64_t>& after) const;
  std::vector<std::shared_ptr<DomainState>> run_domains_;  // allocated in this run
  uint32_t next_domain_ = 1;
  bool submitted_this_run_ = false;  // domains come before the first submit

  RangeAllocator host_arena_;
  std::unordered_set<uint64_t> host_live_;  // host buffers of this run
  std::shared_ptr<LeaseQueue> leases_ = std::make_shared<LeaseQueue>();
  uint64_t run_number_ = 0;

  WorkerImpl& worker_;
  int chips_;
  std::byte* arena_ = nullptr;
  uint64_t next_buffer_ = 1;
  uint64_t next_task_ = 1;

  std::mutex mutex_;
  std::condition_variable sub_ready_cv_;
  DependencyTracker tracker_;
  std::unordered_map<uint64_t, std::shared_ptr<TaskState>> live_;
  std::vector<std::deque<std::shared_ptr<TaskState>>> chip_ready_;
  std::deque<std::shared_ptr<TaskState>> group_ready_;  // head reserves its workers
  std::deque<std::shared_ptr<TaskState>> sub_ready_;
  std::vector<std::vector<std::shared_ptr<TaskState>>> in_flight_;  // [chip][slot]
  std::vector<uint64_t> posted_;                                    // descriptors posted per chip
  std::vector<uint64_t> completed_;                                 // completions read per chip
  std::vector<std::vector<TaskDesc>> outbox_;  // [chip][slot], the source of each post
  size_t outstanding_ = 0;
  uint64_t ready_counter_ = 0;
  std::string first_error_;
  std::atomic<uint64_t> progress_marker_{0};
  std::vector<std::shared_ptr<TaskState>> run_tasks_;  // every task of this run, for dump_dot
  std::vector<Span> spans_;                            // every run so far, when tracing
  std::string trace_path_;                             // RANKFLOW_TRACE, or empty

  std::condition_variable wake_;     // the scheduler thread: work arrived
  std::condition_variable host_cv_;  // the main thread: the run has ended
  bool shutdown_ = false;
  bool ending_ = false;    // the host asked to end the run once it drains
  bool ended_ = false;     // every chip has been told
  bool run_open_ = false;  // between begin_run and the end-of-run markers: heartbeats go out
  std::chrono::steady_clock::time_point last_beat_{};
  std::thread thread_;
  std::vector<std::thread> subs_;
};

}  // namespace rankflow::runtime
