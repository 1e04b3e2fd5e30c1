// KernelTable: the kernels and sub callables every rank registered, in registration order, and
// the lookups of both sides: the host names and checks a task's kernel at submit, a chip finds
// the callable of a descriptor. Built-in kernels (builtin_kernels.h) answer by id. Filled on
// each rank's main thread before init(); read-only afterwards (entries keep their addresses).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "rankflow/runtime.h"

namespace rankflow::runtime {

class KernelTable {
 public:
  KernelHandle add_kernel(std::string name, TaskFn fn);
  SubHandle add_sub(std::string name, TaskFn fn);
  // The name of a kernel (sub == false, built-ins included) or sub callable; InvalidArgument
  // naming the handle when none has that index.
  std::string_view name(bool sub, uint32_t fn) const;
  const TaskFn& kernel(uint32_t index) const { return kernels_.at(index).fn; }
  const TaskFn& sub(uint32_t index) const { return subs_.at(index).fn; }
  bool has_kernel(uint32_t index) const { return index < kernels_.size(); }
  // Every name in order, which must be the same on every rank.
  std::string signature() const;

 private:
  struct Entry {
    std::string name;
    TaskFn fn;
  };
  std::deque<Entry> kernels_;
  std::deque<Entry> subs_;
};

}  // namespace rankflow::runtime
