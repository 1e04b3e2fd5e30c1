// WorkerImpl: the state every rank shares for the DAG runtime: the transport context, the
// runtime's world team (task rings on chips, completion rings and the tensor arena on the host),
// the registered kernels and sub callables, and the lifecycle state. Main thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rankflow/runtime.h"
#include "rankflow/team.h"
#include "runtime/domains.h"
#include "runtime/protocol.h"
#include "transport/context.h"

namespace rankflow::runtime {

class Scheduler;

struct Registered {
  std::string name;
  TaskFn fn;
};

class WorkerImpl {
 public:
  WorkerImpl(int& argc, char**& argv, WorkerOptions options);
  ~WorkerImpl();

  KernelHandle register_kernel(std::string name, TaskFn fn);
  SubHandle register_sub(std::string name, TaskFn fn);
  void init();
  void run(const std::function<void(Orchestrator&)>& body);
  void close();

  bool is_host() const { return rank_ == 0; }
  int rank() const { return rank_; }
  int chips() const { return size_ - 1; }
  const WorkerOptions& options() const { return options_; }
  Team& team() { return *team_; }
  const Registered& kernel(uint32_t index) const { return kernels_.at(index); }
  const Registered& sub(uint32_t index) const { return subs_.at(index); }
  size_t kernel_count() const { return kernels_.size(); }
  size_t sub_count() const { return subs_.size(); }
  std::chrono::nanoseconds timeout() const { return context_->timeout(); }

 private:
  enum class State { kRegistering, kReady, kClosed };
  void check_state(State expected, const char* operation) const;
  void check_registrations_match();
  void serve_run();  // chips: execute tasks until the host ends the run
  void run_kernel(const TaskDesc& desc, bool copy);
  void wait_for_descriptor(uint64_t sequence);

  std::shared_ptr<transport::Context> context_;
  WorkerOptions options_;
  int rank_ = 0;
  int size_ = 0;
  State state_ = State::kRegistering;
  std::vector<Registered> kernels_;
  std::vector<Registered> subs_;
  std::unique_ptr<Team> team_;
  std::unique_ptr<Scheduler> scheduler_;  // host only
  uint64_t chip_sequence_ = 0;            // chips: descriptors consumed so far
  ChipDomains domains_;                   // chips: the domains of this run it belongs to
};

}  // namespace rankflow::runtime
