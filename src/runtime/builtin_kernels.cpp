// The built-in kernels (see builtin_kernels.h). Run on a chip's main thread.
#include "runtime/builtin_kernels.h"

#include <algorithm>
#include <cstring>

#include "rankflow/error.h"
#include "runtime/protocol.h"

namespace rankflow::runtime {
namespace {

void run_copy(ChipEnv&, TaskContext& task, std::span<const std::byte>) {
  auto dst = task.output<std::byte>(0);
  auto src = task.input<std::byte>(1);
  // memmove: a descriptor that is not the host's may name overlapping ranges. An empty view's
  // data() may be null, which memmove must not get even for zero bytes.
  const size_t bytes = std::min(dst.size(), src.size());
  if (bytes > 0) std::memmove(dst.data(), src.data(), bytes);
}

void run_create_domain(ChipEnv& env, TaskContext& task, std::span<const std::byte> payload) {
  const int chips = env.context->world_size() - 1;  // world rank 0 is the host
  env.domains.create(env.context, decode_domain_desc(payload, chips, task.worker()));
}

constexpr BuiltinKernel kBuiltins[] = {
    {kCopyKernel, "copy", &run_copy},
    {kCreateDomainKernel, "allocate_domain", &run_create_domain},
};

}  // namespace

std::span<const BuiltinKernel> builtin_kernels() {
  return kBuiltins;
}

const BuiltinKernel* find_builtin(uint32_t id) {
  if (id < kBuiltinBase) return nullptr;
  for (const BuiltinKernel& k : kBuiltins) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

}  // namespace rankflow::runtime
