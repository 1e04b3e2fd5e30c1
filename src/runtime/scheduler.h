// Scheduler: the host side of a run, and what the orchestration body's Orchestrator talks to.
// It validates each submission, turns its tensor arguments into the bytes they touch and hands
// the task to the graph; the parts it is made of do the rest:
//
//   TaskGraph      states, dependencies and ready order           (task_graph.h)
//   Dispatcher     the chips' links, who drives them, heartbeats   (dispatcher.h, chip_link.h)
//   HostMemory     the host arena: tensors, leased intermediates   (host_memory.h)
//   ChildMemory    each chip's child memory                        (child_memory.h)
//   RunDomains     the run's communication domains                 (run_domains.h)
//   SubWorkerPool  host threads running sub tasks                  (sub_worker_pool.h)
//   observers      tracing and the DOT dump                        (observer.h)
//
// It gets what it needs from the worker (the team, the options, the kernel table, the
// timeout) at construction. Host main thread, except run_sub (sub-worker threads).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankflow/runtime.h"
#include "rankflow/team.h"
#include "runtime/buffer_ids.h"
#include "runtime/child_memory.h"
#include "runtime/dispatcher.h"
#include "runtime/graph_dump.h"
#include "runtime/host_memory.h"
#include "runtime/kernel_table.h"
#include "runtime/observer.h"
#include "runtime/orchestrator_backend.h"
#include "runtime/run_domains.h"
#include "runtime/scope_stack.h"
#include "runtime/sub_worker_pool.h"
#include "runtime/task_graph.h"
#include "runtime/task_pool.h"

namespace rankflow::detail {
struct HostBufferState;
}  // namespace rankflow::detail

namespace rankflow::runtime {

// What the host's scheduler uses of the worker.
struct HostServices {
  Team& team;
  WorkerOptions options;
  const KernelTable& kernels;
  std::chrono::nanoseconds timeout;
  std::vector<bool> chip_shares_core;  // by chip: bound to the host's core
};

class Scheduler : public detail::OrchestratorBackend {
 public:
  explicit Scheduler(HostServices services);
  ~Scheduler() override;

  // Admits a run: later submissions build it. It executes at once when no run is in flight;
  // otherwise its ready tasks wait until the runs before it have ended (end_front_run).
  // Returns its number.
  uint64_t begin_run();
  // Drives the oldest run in flight until every task of it is done, ends it on every chip,
  // releases its memory and returns its first task error (empty when it succeeded); the next
  // run in flight then executes. Timeout when no task finished for the worker's timeout, and
  // false once `deadline` (if any) passed: the run stays in flight either way.
  bool end_front_run(std::string& first_error,
                     std::optional<std::chrono::steady_clock::time_point> deadline = {});
  // The newest run's body threw: its tasks that have not started never will.
  void cancel_newest_run(const std::string& why) { graph_.cancel_unstarted(why); }
  // Runs in flight (admitted and not ended), and the oldest one's number.
  size_t runs_in_flight() const { return run_.in_flight; }
  uint64_t front_run() const { return run_.front; }
  // Whether the oldest run in flight has no task left (end_front_run would not wait).
  bool front_run_idle() const { return run_.in_flight > 0 && graph_.outstanding() == 0; }
  // Called when a wait needs work of a run that does not execute yet (a task's handle, arena
  // memory for the newest run): the pipeline ends the runs before it until `executing()`.
  using CatchUp = std::function<void(const std::function<bool()>& executing)>;
  void set_catch_up(CatchUp catch_up) { catch_up_ = std::move(catch_up); }
  // Scopes of the newest run (Orchestrator::scope_begin, scope_end).
  uint64_t scope_begin() override;
  void scope_end() override;
  void scope_end(uint64_t token) override;
  // Tells the chips that the worker is closing (they wait for it, hearing the heartbeats).
  void announce_close() { dispatcher_->announce_close(); }
  // Runs `work` (an MPI wait of the main thread between runs) with no other thread
  // progressing UCX.
  void exclusively(const std::function<void()>& work) { dispatcher_->exclusively(work); }
  // Persistent host buffers (Worker::create_buffer, release_buffer). Release is InvalidState
  // while a run that named the buffer is still open (this one, or one that timed out).
  HostBuffer create_buffer(size_t bytes);
  void release_buffer(HostBuffer& buffer);
  // Introspection (Worker::committed_child_memory, Worker::live_domains).
  size_t committed_child_memory(int worker) const { return child_.committed(worker); }
  std::map<std::string, Domain> live_domains() const { return domains_.live(); }

  Tensor host_tensor(std::vector<size_t> shape, DType dtype) override;
  Tensor alloc(std::vector<size_t> shape, DType dtype) override;
  Tensor alloc_child(int worker, std::vector<size_t> shape, DType dtype) override;
  void free_child(const Tensor& base) override;
  std::shared_ptr<TaskState> submit(bool sub, uint32_t fn,
                                    std::vector<std::vector<TaskArg>> member_args,
                                    std::vector<int> workers, std::vector<uint64_t> after,
                                    CallConfig config) override;
  std::shared_ptr<TaskState> submit_one(bool sub, uint32_t fn, std::span<const TaskArg> args,
                                        int worker, std::vector<uint64_t>& after,
                                        CallConfig config) override;
  std::shared_ptr<TaskState> copy(const Tensor& dst, const Tensor& src, const char* what) override;
  Domain allocate_domain(std::string name, std::vector<int> workers, size_t window_bytes,
                         std::vector<BufferSpec> buffers) override;
  int chips() const override { return chips_; }
  void dump_dot(const std::string& path) const override { graph_dump_->write(path); }

 private:
  // The common path of every submission: checks `task` (its kind, kernel, config, workers and
  // arguments set), records it, posts it if it is ready.
  std::shared_ptr<TaskState> enter(std::shared_ptr<TaskState> task, std::vector<uint64_t>& after);
  std::shared_ptr<TaskState> fresh_task(bool sub, uint32_t fn, CallConfig config);
  std::shared_ptr<TaskState> user_task(bool sub, uint32_t fn, CallConfig config);
  void check_workers(const std::vector<int>& workers, std::string_view name) const;
  void uses_of(const std::vector<TaskArg>& args, std::string_view name, int worker,
               std::vector<ByteUse>& uses);
  void run_sub(const std::shared_ptr<TaskState>& task, int member, int index);
  void reclaim();
  template <typename Allocate>
  Tensor with_earlier_runs_ended(Allocate&& allocate);
  void close_run(uint64_t run);

  HostServices services_;
  int chips_;
  struct {
    uint64_t number = 0;     // the newest run admitted
    uint64_t front = 0;      // the oldest in flight (executing), when in_flight > 0
    size_t in_flight = 0;    // admitted, not ended
    bool timed_out = false;  // end_front_run threw Timeout: the front run is still open
  } run_;
  CatchUp catch_up_;
  ScopeStack scopes_;
  BufferIds ids_;
  TaskPool tasks_;
  std::vector<ByteUse> uses_;  // enter()'s scratch (body thread)
  HostMemory host_;
  ChildMemory child_;
  RunDomains domains_;
  ObserverList observers_;
  GraphDump* graph_dump_;  // one of observers_
  TaskGraph graph_;
  std::unique_ptr<SubWorkerPool> subs_;
  std::shared_ptr<Dispatcher> dispatcher_;  // handles keep a weak reference to drive their wait
  std::vector<std::weak_ptr<detail::HostBufferState>> buffers_;  // closed with the worker
};

}  // namespace rankflow::runtime
