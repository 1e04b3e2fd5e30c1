// TaskPool: recycles TaskStates, so that a run of many tasks allocates none in steady state:
// a state whose last reference goes (its handle, the graph's record, a dependent's) returns
// to the pool with its vectors' capacity kept, and the shared_ptr control blocks come from the
// pool too. Up to 131,072 of each are kept (a larger run frees the rest): a run of 100k tasks
// whose body runs far ahead of its chips holds most of its states at once, and freeing them at
// its end only to allocate them again in the next run cost a third of the host's time in
// malloc; what is kept is what such a run needed anyway. make() runs on the body's thread and
// takes one lock; a state may come back on any thread (the same lock). The
// free lists outlive the pool while states made from it are still out: the last one to come
// back frees them. Nothing per task touches an atomic reference count of the pool's own.
#pragma once

#include <memory>

#include "runtime/task.h"

namespace rankflow::runtime {

class TaskPool {
 public:
  TaskPool();
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  // A fresh state (every field as a default-constructed TaskState has it). Leaves the pool as
  // it was if an allocation throws.
  std::shared_ptr<TaskState> make();

  struct Store;  // the free states and control blocks (task_pool.cpp)

 private:
  void give_back(void* block);
  Store* store_;
};

}  // namespace rankflow::runtime
