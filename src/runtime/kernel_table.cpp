// KernelTable (see kernel_table.h).
#include "runtime/kernel_table.h"

#include <algorithm>

#include "rankflow/error.h"
#include "runtime/builtin_kernels.h"

namespace rankflow::runtime {
namespace {

const char* what_of(bool sub) {
  return sub ? "sub callable" : "kernel";
}
const char* registrar_of(bool sub) {
  return sub ? "register_sub" : "register_kernel";
}

}  // namespace

uint32_t KernelTable::add(std::deque<Entry>& entries, std::string name, TaskFn fn, bool sub) {
  if (name.empty() || !fn) {
    throw InvalidArgument(std::string(registrar_of(sub)) + " needs a name and a callable");
  }
  const auto live =
      std::count_if(entries.begin(), entries.end(), [](const Entry& e) { return e.live; });
  if (static_cast<size_t>(live) >= kMaxLive) {
    throw InvalidArgument(std::string(registrar_of(sub)) + "('" + name +
                          "'): " + std::to_string(kMaxLive) + " " + what_of(sub) +
                          "s are registered already, the most a worker holds; unregister one "
                          "first");
  }
  entries.push_back({std::move(name), std::move(fn)});
  return static_cast<uint32_t>(entries.size() - 1);
}

KernelHandle KernelTable::add_kernel(std::string name, TaskFn fn) {
  return {add(kernels_, std::move(name), std::move(fn), false)};
}

SubHandle KernelTable::add_sub(std::string name, TaskFn fn) {
  return {add(subs_, std::move(name), std::move(fn), true)};
}

void KernelTable::remove(bool sub, uint32_t fn, const std::string& operation) {
  const std::string handle = operation + ": handle " + std::to_string(fn);
  if (!sub && find_builtin(fn) != nullptr) {
    throw InvalidArgument(handle + " is a built-in kernel, which cannot be unregistered");
  }
  auto& entries = sub ? subs_ : kernels_;
  if (fn >= entries.size()) {
    throw InvalidArgument(handle + " is not a registered " + what_of(sub) + " (use the handle " +
                          registrar_of(sub) + " returned)");
  }
  if (!entries[fn].live) {
    throw InvalidArgument(handle + " ('" + entries[fn].name + "') was unregistered already");
  }
  entries[fn].live = false;
}

void KernelTable::undo_add(bool sub) {
  (sub ? subs_ : kernels_).pop_back();
}

void KernelTable::undo_remove(bool sub, uint32_t fn) {
  (sub ? subs_ : kernels_).at(fn).live = true;
}

std::string_view KernelTable::name(bool sub, uint32_t fn) const {
  if (!sub) {
    if (const BuiltinKernel* builtin = find_builtin(fn)) return builtin->name;
  }
  const auto& entries = sub ? subs_ : kernels_;
  const char* use = sub ? "submit_sub" : "submit";
  if (fn >= entries.size()) {
    throw InvalidArgument(std::string(use) + ": handle " + std::to_string(fn) +
                          " is not a registered " + what_of(sub) + " (use the handle " +
                          registrar_of(sub) + " returned)");
  }
  if (!entries[fn].live) {
    throw InvalidArgument(std::string(use) + ": handle " + std::to_string(fn) + " ('" +
                          entries[fn].name + "') names a " + what_of(sub) +
                          " that was unregistered");
  }
  return entries[fn].name;
}

std::string KernelTable::signature() const {
  std::string signature;
  for (const auto& k : kernels_)
    signature += (k.live ? "k:" : "k-:") + k.name + ";";
  for (const auto& s : subs_)
    signature += (s.live ? "s:" : "s-:") + s.name + ";";
  return signature;
}

}  // namespace rankflow::runtime
