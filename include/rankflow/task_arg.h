// rankflow/task_arg.h: the arguments of a task. Each is one of three kinds:
//
//   rankflow::in(x), out(y), inout(z), out_existing(w), no_dep(v)  a tensor and how the task
//                                                                 uses it (dependencies follow)
//   rankflow::scalar(42), scalar(0.5f), scalar(ptr)               a value of up to 8 bytes,
//                                                                 carried as its bit pattern
//   rankflow::domain_arg(tp)                                      a communication domain
//
// A kernel reads tensor and domain arguments by their position among the non-scalar arguments
// (TaskContext::input/output/view/domain) and scalars by their position among the scalars
// (TaskContext::scalar<T>), so {in(a), scalar(n), out(b)} has tensors 0 (a) and 1 (b) and
// scalar 0 (n). A task takes up to 256 tensor and domain arguments and 128 scalars.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rankflow/domain.h"
#include "rankflow/error.h"
#include "rankflow/tensor.h"

namespace rankflow {

enum class ArgKind : uint8_t { kTensor, kScalar, kDomain };

struct TaskArg {
  ArgKind kind = ArgKind::kTensor;
  Tensor tensor;  // kTensor
  Access access = Access::kInput;
  uint64_t scalar_bits = 0;  // kScalar: the value's bytes, zero-extended
  Domain domain;             // kDomain
};
// The name of earlier releases, when every argument was a tensor.
using TensorArg = TaskArg;

// A tensor argument; in(), out(), ... name the access.
inline TaskArg tensor_arg(const Tensor& t, Access access) {
  TaskArg arg;
  arg.tensor = t;
  arg.access = access;
  return arg;
}
inline TaskArg in(const Tensor& t) {
  return tensor_arg(t, Access::kInput);
}
inline TaskArg out(const Tensor& t) {
  return tensor_arg(t, Access::kOutput);
}
inline TaskArg inout(const Tensor& t) {
  return tensor_arg(t, Access::kInOut);
}
inline TaskArg out_existing(const Tensor& t) {
  return tensor_arg(t, Access::kOutputExisting);
}
inline TaskArg no_dep(const Tensor& t) {
  return tensor_arg(t, Access::kNoDep);
}

// A scalar argument: an integer, a float, a pointer or any trivially copyable value of at most
// 8 bytes (InvalidArgument for a wider one). It creates no dependencies.
template <typename T>
TaskArg scalar(T value) {
  static_assert(std::is_trivially_copyable_v<T>, "a scalar argument must be trivially copyable");
  if (sizeof(T) > sizeof(uint64_t)) {
    throw InvalidArgument("rankflow::scalar: a value of " + std::to_string(sizeof(T)) +
                          " bytes; scalars carry at most 8 (pass a tensor instead)");
  }
  TaskArg arg;
  arg.kind = ArgKind::kScalar;
  arg.access = Access::kNoDep;
  std::memcpy(&arg.scalar_bits, &value, sizeof(T) < 8 ? sizeof(T) : 8);
  return arg;
}

// A task argument that hands the kernel `domain` (TaskContext::domain). It creates no
// dependencies; the task runs after the domain exists. Only chip tasks on members may take it.
TaskArg domain_arg(const Domain& domain);

}  // namespace rankflow
