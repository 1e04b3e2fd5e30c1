// The host <-> chip protocol over the runtime's world team: a ring of task descriptors in every
// chip's window (written by the host, one slot per task in flight) and a ring of completion
// records per chip in the host's window (written by that chip). Plain structs copied as bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rankflow::runtime {

constexpr uint32_t kRingSlots = 16;  // tasks in flight per chip
constexpr uint32_t kMaxArgs = 16;
constexpr uint32_t kMaxDims = 4;
constexpr size_t kMessageBytes = 480;

// Signal slots of the runtime team.
constexpr uint32_t kPostedSignal = 0;     // on a chip: descriptors posted to it
constexpr uint32_t kDoneSignalBase = 1;   // on the host: + chip id, completions from that chip
constexpr uint32_t kHeartbeatSignal = 1;  // on a chip: the host is alive and a run is open

enum class DescKind : uint32_t { kTask = 1, kEndRun = 2 };

enum ArgSpace : uint32_t {
  kHostSpace = 0,    // the host's arena
  kChildSpace = 1,   // the running chip's child memory
  kDomainSpace = 2,  // no memory: `offset` is the id of a communication domain
};

struct ArgDesc {
  uint64_t offset;  // of the first element: bytes from the start of the host arena, or of the
                    // chip's child arena
  uint64_t bytes;   // of the elements
  uint64_t extent;  // bytes from the first element to the end of the last
  uint32_t access;
  uint32_t ndim;
  uint64_t shape[kMaxDims];
  uint64_t strides[kMaxDims];  // in elements
  uint32_t space;              // ArgSpace: where `offset` points
  uint32_t element_bytes;
};

// The built-in kernel behind Orchestrator::copy_to / copy_from: args[0] = args[1].
constexpr uint32_t kCopyKernel = 0xFFFFFFF0u;
// The built-in group kernel behind Orchestrator::allocate_domain: its members build the domain
// described by the DomainDesc in the descriptor's payload.
constexpr uint32_t kCreateDomainKernel = 0xFFFFFFF1u;

constexpr uint32_t kMaxDomainMembers = 64;
constexpr uint32_t kMaxDomainBuffers = 16;
constexpr size_t kMaxDomainName = 48;  // bytes of a domain or buffer name, with the terminator

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

struct TaskDesc {
  DescKind kind;
  uint32_t kernel;
  uint64_t task_id;
  uint32_t nargs;
  uint32_t group_rank;
  uint32_t group_size;
  uint32_t threads;
  uint64_t scratch_bytes;
  uint32_t payload_bytes;  // a kCreateDomainKernel descriptor: a DomainDesc in place of args
  uint32_t reserved;
  ArgDesc args[kMaxArgs];
};
static_assert(sizeof(DomainDesc) <= sizeof(ArgDesc) * kMaxArgs);

struct Completion {
  uint64_t task_id;
  uint32_t ok;
  uint32_t reserved;
  uint64_t start_ns;  // steady_clock on the chip (one clock per host), for the trace
  uint64_t end_ns;
  char message[kMessageBytes];
};

constexpr size_t kDescStride = (sizeof(TaskDesc) + 63) / 64 * 64;

// Only the used part of a descriptor or record travels: the header and `nargs` arguments, or
// the header and the message of a failure.
inline size_t used_bytes(const TaskDesc& d) {
  const size_t args = d.nargs * sizeof(ArgDesc);
  return offsetof(TaskDesc, args) + (args > d.payload_bytes ? args : d.payload_bytes);
}
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
