// The task descriptor's byte format (see task_codec.h).
#include "runtime/task_codec.h"

#include <cstring>
#include <string>

#include "rankflow/error.h"
#include "runtime/domains.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {

static_assert(kMaxDims == Dims::kMax, "the wire carries as many dimensions as a Tensor holds");
namespace {

using detail::TensorAccess;

size_t record_bytes(uint32_t ndim) {
  return sizeof(ArgRecord) + 2 * ndim * sizeof(uint64_t);
}

std::byte* put(std::byte* at, const void* what, size_t bytes) {
  std::memcpy(at, what, bytes);
  return at + bytes;
}

std::byte* encode_arg(const TaskArg& arg, std::byte* at) {
  ArgRecord r{};
  r.access = static_cast<uint32_t>(arg.access);
  if (arg.kind == ArgKind::kDomain) {
    r.space = kDomainSpace;
    r.offset = detail::DomainState::of(arg.domain)->id;
    return put(at, &r, sizeof(r));
  }
  const Tensor& t = arg.tensor;
  r.offset = TensorAccess::offset(t);
  r.bytes = t.bytes();
  r.extent = t.extent_bytes();
  r.ndim = static_cast<uint32_t>(t.shape().size());
  const uint64_t buffer = TensorAccess::buffer(t);
  r.space = is_domain_buffer(buffer) ? kDomainWindowSpace | domain_of_buffer(buffer) << 8
            : t.home() >= 0          ? kChildSpace
                                     : kHostSpace;
  r.element_bytes = static_cast<uint32_t>(dtype_size(t.dtype()));
  at = put(at, &r, sizeof(r));
  for (size_t d : t.shape()) {
    const uint64_t v = d;
    at = put(at, &v, sizeof(v));
  }
  for (size_t s : t.strides()) {
    const uint64_t v = s;
    at = put(at, &v, sizeof(v));
  }
  return at;
}

[[noreturn]] void malformed(const std::string& what) {
  throw TransportError("malformed task descriptor: " + what);
}

}  // namespace

size_t encode_task(const TaskState& task, size_t member, std::byte* out, uint32_t ring_deps) {
  const std::vector<TaskArg>& args = task.member_args[member];
  DescHeader h{};
  h.kind = DescKind::kTask;
  h.kernel = task.fn;
  h.task_id = task.id;
  h.group_rank = static_cast<uint32_t>(member);
  h.group_size = static_cast<uint32_t>(task.workers.size());
  h.threads = static_cast<uint32_t>(task.config.threads);
  h.scratch_bytes = task.config.scratch_bytes;
  h.ring_task_window = task.config.runtime_env.ring_task_window;
  h.ring_dep_pool = task.config.runtime_env.ring_dep_pool;
  h.ring_heap = task.config.runtime_env.ring_heap;
  h.ring_deps = ring_deps;
  std::byte* at = out + sizeof(DescHeader);
  for (const TaskArg& a : args) {
    if (a.kind == ArgKind::kScalar) continue;
    at = encode_arg(a, at);
    ++h.tensor_args;
  }
  for (const TaskArg& a : args) {
    if (a.kind != ArgKind::kScalar) continue;
    at = put(at, &a.scalar_bits, sizeof(uint64_t));
    ++h.scalar_args;
  }
  if (task.payload) {
    at = put(at, task.payload->data(), task.payload->size());
    h.payload_bytes = static_cast<uint32_t>(task.payload->size());
  }
  h.total_bytes = static_cast<uint32_t>(at - out);
  std::memcpy(out, &h, sizeof(h));
  return h.total_bytes;
}

size_t encode_end_of_run(std::byte* out) {
  DescHeader h{};
  h.kind = DescKind::kEndRun;
  h.total_bytes = sizeof(DescHeader);
  std::memcpy(out, &h, sizeof(h));
  return sizeof(h);
}

void decode_task(const std::byte* in, size_t available, DecodedTask& task) {
  if (available < sizeof(DescHeader)) malformed("shorter than its header");
  DescHeader& h = task.header;
  std::memcpy(&h, in, sizeof(h));
  if (h.kind != DescKind::kTask && h.kind != DescKind::kEndRun) {
    malformed("kind " + std::to_string(static_cast<uint32_t>(h.kind)));
  }
  if (h.total_bytes < sizeof(DescHeader) || h.total_bytes > available) {
    malformed(std::to_string(h.total_bytes) + " bytes in a slot of " + std::to_string(available));
  }
  if (h.ring_deps >> (kRingSlots - 1) != 0) {
    malformed("ring dependencies " + std::to_string(h.ring_deps) + " reach past the ring");
  }
  if (h.tensor_args > kMaxTensorArgs || h.scalar_args > kMaxScalarArgs ||
      h.payload_bytes > kMaxPayloadBytes) {
    malformed(std::to_string(h.tensor_args) + " tensor arguments, " +
              std::to_string(h.scalar_args) + " scalars, a payload of " +
              std::to_string(h.payload_bytes) + " bytes");
  }
  const std::byte* at = in + sizeof(DescHeader);
  const std::byte* end = in + h.total_bytes;
  task.args.resize(h.tensor_args);
  for (uint32_t i = 0; i < h.tensor_args; ++i) {
    DecodedArg& a = task.args[i];
    if (static_cast<size_t>(end - at) < sizeof(ArgRecord)) malformed("argument past its end");
    std::memcpy(&a.record, at, sizeof(ArgRecord));
    const uint32_t ndim = a.record.ndim;
    if (ndim > kMaxDims || static_cast<size_t>(end - at) < record_bytes(ndim)) {
      malformed("argument " + std::to_string(i) + " with " + std::to_string(ndim) +
                " dimensions past its end");
    }
    const uint32_t kind = space_kind(a.record.space);
    if (kind > kDomainWindowSpace || (kind != kDomainWindowSpace && space_domain(a.record.space))) {
      malformed("argument " + std::to_string(i) + "'s space " + std::to_string(a.record.space));
    }
    if (a.record.access > static_cast<uint32_t>(Access::kNoDep)) {
      malformed("argument " + std::to_string(i) + "'s access " + std::to_string(a.record.access));
    }
    if (a.record.space == kDomainSpace && a.record.offset > UINT32_MAX) {
      malformed("argument " + std::to_string(i) + " names domain " +
                std::to_string(a.record.offset) + "; domain ids are 32-bit");
    }
    at += sizeof(ArgRecord);
    std::memcpy(a.shape, at, ndim * sizeof(uint64_t));
    at += ndim * sizeof(uint64_t);
    std::memcpy(a.strides, at, ndim * sizeof(uint64_t));
    at += ndim * sizeof(uint64_t);
  }
  const size_t tail = h.scalar_args * sizeof(uint64_t) + h.payload_bytes;
  if (static_cast<size_t>(end - at) != tail) {
    malformed(std::to_string(end - at) + " bytes of scalars and payload, expected " +
              std::to_string(tail));
  }
  task.scalars.resize(h.scalar_args);
  if (h.scalar_args > 0) std::memcpy(task.scalars.data(), at, h.scalar_args * sizeof(uint64_t));
  at += h.scalar_args * sizeof(uint64_t);
  task.payload.assign(at, at + h.payload_bytes);
}

}  // namespace rankflow::runtime
