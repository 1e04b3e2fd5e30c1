// KernelTable: the kernels and sub callables every rank registered, in registration order, and
// the lookups of both sides: the host names and checks a task's kernel at submit, a chip finds
// the callable of a descriptor. Built-in kernels (builtin_kernels.h) answer by id.
//
// Changed only on each rank's main thread and never during a run (WorkerImpl refuses that), so
// the threads that read it inside a run (sub-workers, the chip's service loop) see it fixed.
// Entries keep their addresses and their indices: an unregistered entry stays as a tombstone,
// so a stale handle is refused rather than naming a later registration.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "rankflow/runtime.h"

namespace rankflow::runtime {

class KernelTable {
 public:
  // Live registrations each target (kernels, sub callables) may hold, as in the reference
  // runtime (MAX_REGISTERED_CALLABLE_IDS).
  static constexpr size_t kMaxLive = 64;

  KernelHandle add_kernel(std::string name, TaskFn fn);
  SubHandle add_sub(std::string name, TaskFn fn);
  // Marks the entry unregistered; InvalidArgument, prefixed with `operation`, for a handle that
  // is not live.
  void remove(bool sub, uint32_t fn, const std::string& operation);
  // Takes back the last add (a collective registration that the ranks disagreed on).
  void undo_add(bool sub);
  // Makes an unregistered entry live again (a collective unregister the ranks disagreed on).
  void undo_remove(bool sub, uint32_t fn);
  // The name of a live kernel (sub == false, built-ins included) or sub callable;
  // InvalidArgument naming the handle when it is not live.
  std::string_view name(bool sub, uint32_t fn) const;
  const TaskFn& kernel(uint32_t index) const { return kernels_.at(index).fn; }
  const TaskFn& sub(uint32_t index) const { return subs_.at(index).fn; }
  bool has_kernel(uint32_t index) const { return index < kernels_.size() && kernels_[index].live; }
  // Every entry in order, live or not, which must be the same on every rank.
  std::string signature() const;

 private:
  struct Entry {
    std::string name;
    TaskFn fn;
    bool live = true;
  };
  static uint32_t add(std::deque<Entry>& entries, std::string name, TaskFn fn, bool sub);
  std::deque<Entry> kernels_;
  std::deque<Entry> subs_;
};

}  // namespace rankflow::runtime
