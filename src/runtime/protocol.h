// The host <-> chip protocol over the runtime's world team: a ring of task descriptors in every
// chip's window (written by the host, one slot per task in flight) and a ring of completion
// records per chip in the host's window (written by that chip). Plain structs copied as bytes;
// a descriptor has a variable size (see task_codec.h) and only its used part travels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rankflow::runtime {

constexpr uint32_t kRingSlots = 16;  // tasks in flight per chip
// What one task may carry, as the reference runtime allows.
constexpr uint32_t kMaxTensorArgs = 256;  // tensor and domain arguments
constexpr uint32_t kMaxScalarArgs = 128;
constexpr uint32_t kMaxDims = 5;
constexpr size_t kMessageBytes = 480;

// The runtime team's one signal slot: on a chip, the host is alive and a run is open. Posted
// and completed counts are single-writer counters (counter.h).
constexpr uint32_t kHeartbeatSignal = 0;
constexpr uint32_t kClosingSignal = 1;  // the host has begun Worker::close
constexpr uint32_t kRuntimeSignalSlots = 2;

enum class DescKind : uint32_t { kTask = 1, kEndRun = 2 };

enum ArgSpace : uint32_t {
  kHostSpace = 0,    // the host's arena
  kChildSpace = 1,   // the running chip's child memory
  kDomainSpace = 2,  // no memory: `offset` is the id of a communication domain
  // The running chip's window of a domain (a named buffer as a Tensor): `offset` is bytes from
  // the window's start, and the domain's id travels in the space's upper 24 bits.
  kDomainWindowSpace = 3,
};
inline uint32_t space_kind(uint32_t space) {
  return space & 0xFF;
}
inline uint32_t space_domain(uint32_t space) {
  return space >> 8;
}

// One tensor or domain argument as it travels: a fixed part, then `ndim` shape entries and
// `ndim` strides (uint64 each).
struct ArgRecord {
  uint64_t offset;  // of the first element: bytes from the start of the host arena, or of the
                    // chip's child arena; a domain's id in kDomainSpace
  uint64_t bytes;   // of the elements
  uint64_t extent;  // bytes from the first element to the end of the last
  uint32_t access;
  uint32_t ndim;
  uint32_t space;  // ArgSpace: where `offset` points
  uint32_t element_bytes;
};

// The fixed part of a descriptor. It is followed by `tensor_args` ArgRecords (each with its
// dimensions), then `scalar_args` uint64 values, then `payload_bytes` of a built-in kernel's
// payload; `total_bytes` covers all of it.
struct DescHeader {
  DescKind kind;
  uint32_t kernel;
  uint64_t task_id;
  uint32_t group_rank;
  uint32_t group_size;
  uint32_t threads;
  uint32_t tensor_args;
  uint32_t scalar_args;
  uint32_t payload_bytes;
  uint64_t scratch_bytes;
  uint32_t total_bytes;
  // Bit k: this task follows the descriptor k + 1 places earlier in this chip's ring, and runs
  // only if that one succeeded (the host posts a dependent task before its predecessor on the
  // same chip finishes; the chip runs its ring in order). Bits from kRingSlots - 1 up are 0.
  uint32_t ring_deps;
  // CallConfig::runtime_env, as the kernel sees it (the host enforced it).
  uint32_t ring_task_window;
  uint32_t ring_dep_pool;
  uint64_t ring_heap;
};

constexpr size_t kMaxPayloadBytes = 4096;
constexpr size_t kMaxArgRecordBytes = sizeof(ArgRecord) + 2 * kMaxDims * sizeof(uint64_t);
constexpr size_t kMaxDescBytes = sizeof(DescHeader) + kMaxTensorArgs * kMaxArgRecordBytes +
                                 kMaxScalarArgs * sizeof(uint64_t) + kMaxPayloadBytes;
constexpr size_t kDescStride = (kMaxDescBytes + 63) / 64 * 64;

constexpr uint32_t kMaxDomainMembers = 64;
constexpr uint32_t kMaxDomainBuffers = 16;
constexpr size_t kMaxDomainName = 48;  // bytes of a domain or buffer name, with the terminator

// The payload of the built-in create-domain kernel (builtin_kernels.h).
struct DomainDesc {
  uint32_t id;
  uint32_t members;
  int32_t workers[kMaxDomainMembers];  // domain rank r is chip worker workers[r]
  uint64_t window_bytes;
  uint32_t buffers;
  uint32_t reserved;
  char name[kMaxDomainName];
  char buffer_names[kMaxDomainBuffers][kMaxDomainName];
  uint64_t buffer_bytes[kMaxDomainBuffers];
  uint64_t buffer_alignment[kMaxDomainBuffers];
};
static_assert(sizeof(DomainDesc) <= kMaxPayloadBytes);

struct Completion {
  uint64_t task_id;
  uint32_t ok;
  uint32_t reserved;
  uint64_t start_ns;  // steady_clock on the chip (one clock per host), for the trace
  uint64_t end_ns;
  char message[kMessageBytes];
};

// Only the used part of a record travels: the header, and the message of a failure.
inline size_t used_bytes(const Completion& c) {
  size_t message = 0;
  if (!c.ok) {
    while (message + 1 < kMessageBytes && c.message[message] != '\0')
      ++message;
    ++message;  // the terminator
  }
  return offsetof(Completion, message) + message;
}
constexpr size_t kCompletionStride = (sizeof(Completion) + 63) / 64 * 64;

}  // namespace rankflow::runtime
