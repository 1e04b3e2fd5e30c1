// RunDomains: the host's communication domains of the runs in flight. allocate_domain checks a
// request and describes it for the members (the chips build it in a built-in group task ahead
// of every other task); check_args vets a task's domain arguments and adds the creation task
// to what the task waits for. Domains end with their run; names are unique within a run. Host main
// thread (the body).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rankflow/task_arg.h"
#include "runtime/domains.h"

namespace rankflow::runtime {

class RunDomains {
 public:
  explicit RunDomains(int chips) : chips_(chips) {}

  void begin_run(uint64_t run) {
    run_ = run;
    submitted_ = false;
  }
  // The first submit of a task that is not a domain's creation closes allocation.
  void note_submit() { submitted_ = true; }
  // A new domain's state and the payload its members build it from (its creation task is the
  // caller's to submit). InvalidArgument or InvalidState naming what was wrong.
  std::shared_ptr<DomainState> allocate(std::string name, std::vector<int> workers,
                                        size_t window_bytes, std::vector<BufferSpec> buffers,
                                        std::vector<std::byte>& payload);
  // Domain arguments of one member on `worker` (-1: a sub task): live domains of this run
  // that `worker` belongs to; appends their creation tasks to `after`.
  // Tensors over a domain's buffers (Domain::buffer_tensor) are checked here too: the member
  // whose copy it names runs the task.
  void check_args(const std::vector<TaskArg>& args, std::string_view task, int worker,
                  std::vector<uint64_t>& after) const;
  // After run `run`: the chips free its domains.
  void end_run(uint64_t run);
  // The newest run's domains that are not released, by name.
  std::map<std::string, Domain> live() const;

 private:
  void check_buffer_use(const Tensor& t, std::string_view task, size_t position, int worker,
                        std::vector<uint64_t>& after) const;

  int chips_;
  uint64_t run_ = 0;
  uint32_t next_id_ = 1;
  bool submitted_ = false;
  std::vector<std::shared_ptr<DomainState>> domains_;  // of the runs in flight
};

}  // namespace rankflow::runtime
