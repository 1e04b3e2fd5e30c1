// TaskPool: recycles TaskStates, so that a run of many tasks allocates none in steady state:
// a state whose last reference goes (its handle, the graph's record, the graph dump's) returns
// to the pool with its vectors' capacity kept, and the shared_ptr control blocks come from the
// pool too (up to 4096 of each are kept; a larger run frees the rest). make() runs on the
// body's thread; a state may come back on any thread (one lock). The pool lives as long as the
// last state made from it.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/task.h"

namespace rankflow::runtime {

class TaskPool {
 public:
  TaskPool();
  // A fresh state (every field as a default-constructed TaskState has it).
  std::shared_ptr<TaskState> make();

  struct Store;  // the free states and control blocks (task_pool.cpp)

 private:
  std::shared_ptr<Store> store_;
};

}  // namespace rankflow::runtime
