// The runtime's built-in kernels, one table: each has an id far above the user's kernel
// indices, a name (as traces and errors show it) and what a chip does to run it. The host
// submits them like any kernel (copy_to/copy_from, allocate_domain); a chip's service loop
// looks the id up here. Channel and queue set-up will be entries of this table too. Chip side:
// the chip's main thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "rankflow/runtime.h"
#include "runtime/domains.h"
#include "transport/context.h"

namespace rankflow::runtime {

// What a built-in kernel may use on the chip besides its task's arguments.
struct ChipEnv {
  std::shared_ptr<transport::Context> context;
  ChipDomains& domains;
};

struct BuiltinKernel {
  uint32_t id;
  std::string_view name;
  void (*run)(ChipEnv& env, TaskContext& task, std::span<const std::byte> payload);
};

constexpr uint32_t kBuiltinBase = 0xFFFFFF00u;
// args[0] = args[1] (Orchestrator::copy_to / copy_from).
constexpr uint32_t kCopyKernel = kBuiltinBase + 0;
// A group kernel: its members build the domain that the payload (a DomainDesc) describes.
constexpr uint32_t kCreateDomainKernel = kBuiltinBase + 1;

std::span<const BuiltinKernel> builtin_kernels();
// The entry of `id`, or null when it is not a built-in kernel's id.
const BuiltinKernel* find_builtin(uint32_t id);

}  // namespace rankflow::runtime
