// WorkerImpl: one rank's DAG runtime and its lifecycle: registration, init (the runtime's world
// team: task rings on chips, completion rings and the tensor arena on the host), runs, close.
// The host holds a Scheduler, each chip a ChipService; both get what they need from here at
// init. Main thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rankflow/runtime.h"
#include "rankflow/team.h"
#include "runtime/chip_service.h"
#include "runtime/kernel_table.h"
#include "runtime/run_pipeline.h"
#include "runtime/scheduler.h"
#include "transport/context.h"

namespace rankflow::detail {

class WorkerImpl {
 public:
  WorkerImpl(int& argc, char**& argv, WorkerOptions options);
  ~WorkerImpl();

  // Before init() each rank registers on its own (init checks that they agree); after it a
  // registration or unregister is collective (see agree_on_registrations).
  KernelHandle register_kernel(std::string name, TaskFn fn);
  SubHandle register_sub(std::string name, TaskFn fn);
  void unregister(bool sub, uint32_t fn, const char* operation);
  void init();
  void run(const std::function<void(Orchestrator&)>& body);
  RunHandle submit(const std::function<void(Orchestrator&)>& body);
  void close();

  bool is_host() const { return rank_ == 0; }
  int rank() const { return rank_; }
  int chips() const { return size_ - 1; }
  const runtime::Scheduler& host_scheduler(const char* operation) const;
  HostBuffer create_buffer(size_t bytes);
  void release_buffer(HostBuffer& buffer);

 private:
  enum class State { kRegistering, kReady, kClosed };
  void check_state(State expected, const char* operation) const;
  void check_registrations_match();
  void check_can_register(const char* operation);
  // InvalidState when called from a task during a run (a sub-worker thread, or a kernel):
  // only the body's own thread may change what the run's tasks see.
  void check_not_from_task(const char* operation) const;
  // Every run in flight ends first (a timed-out one's late tasks finish, the chips leave it),
  // or Timeout; their errors stay with their handles.
  void drain_runs();
  // A chip serves the run (its body is the host's); the host admits it.
  std::shared_ptr<RunRecord> start_run(const std::function<void(Orchestrator&)>& body,
                                       const char* operation);
  std::vector<uint64_t> gather_words(uint64_t first, uint64_t second, const std::string& operation);
  template <typename Change, typename Undo>
  auto change_registrations(const std::string& operation, Change change, Undo undo);
  void agree_on_registrations(const std::string& operation, std::exception_ptr local_error);
  void end_runs_at_close();
  void tell_chips_the_job_ends();

  std::shared_ptr<transport::Context> context_;
  WorkerOptions options_;
  int rank_ = 0;
  int size_ = 0;
  State state_ = State::kRegistering;
  std::atomic<bool> in_run_{false};  // inside a body (a chip: serving a run)
  std::thread::id run_thread_;       // the thread inside it
  runtime::KernelTable kernels_;
  std::unique_ptr<Team> team_;
  std::unique_ptr<runtime::Scheduler> scheduler_;   // host only
  std::shared_ptr<runtime::RunPipeline> pipeline_;  // host only: the runs in flight
  std::unique_ptr<runtime::ChipService> chip_;      // chips only
};

}  // namespace rankflow::detail
