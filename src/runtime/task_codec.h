// The task descriptor's byte format (protocol.h): the host encodes a task's member into a
// ring slot; a chip decodes the slot it was signalled about. The decoder trusts nothing: every
// count and length is checked against the bytes that arrived, and a malformed descriptor is a
// TransportError naming what was wrong. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/protocol.h"
#include "runtime/task.h"

namespace rankflow::runtime {

// One decoded tensor or domain argument.
struct DecodedArg {
  ArgRecord record;
  uint64_t shape[kMaxDims];
  uint64_t strides[kMaxDims];  // in elements
};

struct DecodedTask {
  DescHeader header;
  std::vector<DecodedArg> args;
  std::vector<uint64_t> scalars;
  std::vector<std::byte> payload;
};

// Encodes member `member` of `task` into `out` (kDescStride bytes); returns the bytes used.
// `ring_deps`: DescHeader::ring_deps.
size_t encode_task(const TaskState& task, size_t member, std::byte* out, uint32_t ring_deps = 0);
// An end-of-run marker; returns the bytes used.
size_t encode_end_of_run(std::byte* out);
// Decodes the descriptor in `in` (`available` bytes: the slot's size) into `task`, reusing its
// vectors. Throws TransportError for a malformed one.
void decode_task(const std::byte* in, size_t available, DecodedTask& task);

}  // namespace rankflow::runtime
