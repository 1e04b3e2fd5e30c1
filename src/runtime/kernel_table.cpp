// KernelTable (see kernel_table.h).
#include "runtime/kernel_table.h"

#include "rankflow/error.h"
#include "runtime/builtin_kernels.h"

namespace rankflow::runtime {

KernelHandle KernelTable::add_kernel(std::string name, TaskFn fn) {
  if (name.empty() || !fn) throw InvalidArgument("register_kernel needs a name and a callable");
  kernels_.push_back({std::move(name), std::move(fn)});
  return {static_cast<uint32_t>(kernels_.size() - 1)};
}

SubHandle KernelTable::add_sub(std::string name, TaskFn fn) {
  if (name.empty() || !fn) throw InvalidArgument("register_sub needs a name and a callable");
  subs_.push_back({std::move(name), std::move(fn)});
  return {static_cast<uint32_t>(subs_.size() - 1)};
}

std::string_view KernelTable::name(bool sub, uint32_t fn) const {
  if (!sub) {
    if (const BuiltinKernel* builtin = find_builtin(fn)) return builtin->name;
  }
  const auto& entries = sub ? subs_ : kernels_;
  if (fn >= entries.size()) {
    throw InvalidArgument(std::string(sub ? "submit_sub" : "submit") + ": handle " +
                          std::to_string(fn) + " is not a registered " +
                          (sub ? "sub callable" : "kernel") + " (use the handle " +
                          (sub ? "register_sub" : "register_kernel") + " returned)");
  }
  return entries[fn].name;
}

std::string KernelTable::signature() const {
  std::string signature;
  for (const auto& k : kernels_)
    signature += "k:" + k.name + ";";
  for (const auto& s : subs_)
    signature += "s:" + s.name + ";";
  return signature;
}

}  // namespace rankflow::runtime
