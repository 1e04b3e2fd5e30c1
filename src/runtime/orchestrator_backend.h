// OrchestratorBackend: what the public Orchestrator (and TaskHandle) forward to. The host's
// Scheduler implements it; the interface keeps the runtime's classes out of the public headers.
// Called on the host's main thread, in the orchestration body.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rankflow/runtime.h"

namespace rankflow::detail {

class OrchestratorBackend {
 public:
  virtual ~OrchestratorBackend() = default;

  virtual Tensor host_tensor(std::vector<size_t> shape, DType dtype) = 0;
  virtual Tensor alloc(std::vector<size_t> shape, DType dtype) = 0;
  virtual Tensor alloc_child(int worker, std::vector<size_t> shape, DType dtype) = 0;
  virtual void free_child(const Tensor& base) = 0;
  // A sub task (workers empty), a single chip task (one worker) or a group (several).
  virtual std::shared_ptr<TaskState> submit(bool sub, uint32_t fn,
                                            std::vector<std::vector<TaskArg>> member_args,
                                            std::vector<int> workers, std::vector<uint64_t> after,
                                            CallConfig config) = 0;
  // A task with one member (sub: worker ignored), its arguments copied into the pooled state's
  // own vector (no allocation in steady state).
  virtual std::shared_ptr<TaskState> submit_one(bool sub, uint32_t fn,
                                                std::span<const TaskArg> args, int worker,
                                                std::vector<uint64_t>& after,
                                                CallConfig config) = 0;
  // A copy between host and child memory, as a task on the child's worker.
  virtual std::shared_ptr<TaskState> copy(const Tensor& dst, const Tensor& src,
                                          const char* what) = 0;
  virtual Domain allocate_domain(std::string name, std::vector<int> workers, size_t window_bytes,
                                 std::vector<BufferSpec> buffers) = 0;
  virtual uint64_t scope_begin() = 0;  // the scope's token
  virtual void scope_end() = 0;
  virtual void scope_end(uint64_t token) = 0;  // that scope (and any open inside it), if open
  virtual int chips() const = 0;
  virtual void dump_dot(const std::string& path) const = 0;

  // The body's view of this backend, and a task's handle (their constructors are private).
  Orchestrator orchestrator() { return Orchestrator(*this); }
  static TaskHandle handle(std::shared_ptr<TaskState> task) { return TaskHandle(std::move(task)); }
};

}  // namespace rankflow::detail
