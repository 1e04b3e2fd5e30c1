// Fuzz target: task descriptors, the bytes of one ring slot as a chip reads them.
//
// Feeds: the whole input as a slot of that many bytes to decode_task (runtime/task_codec.h),
// then every tensor argument it decoded to the chip's check against the memory it names
// (check_arg, runtime/chip_args.h: a host arena of kArenaBytes, a child memory of kChildBytes)
// and, for one it accepts, to the write-back walk over its contiguous runs (for_each_run).
//
// A failure is: a crash, hang or sanitizer report; decode_task or check_arg throwing anything but
// a TransportError ("malformed task descriptor: ..." from the decoder); a decoded descriptor that
// does not re-encode to exactly the bytes it came from; a decoded record the host cannot have
// sent (an access outside rankflow::Access, a domain id wider than DomainDesc's uint32 id); a run
// of an accepted argument outside its extent, or runs that do not cover exactly its bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "runtime/chip_args.h"
#include "runtime/task_codec.h"

namespace {

using namespace rankflow;
using namespace rankflow::runtime;

constexpr size_t kArenaBytes = 16 << 10;
constexpr size_t kChildBytes = 4 << 10;

// The bytes a decoded descriptor stands for: header, records with their dimensions, scalars,
// payload, in the order protocol.h gives.
std::vector<std::byte> reencode(const DecodedTask& t) {
  std::vector<std::byte> out(sizeof(DescHeader));
  std::memcpy(out.data(), &t.header, sizeof(DescHeader));
  auto append = [&](const void* what, size_t bytes) {
    const auto* p = static_cast<const std::byte*>(what);
    out.insert(out.end(), p, p + bytes);
  };
  for (const DecodedArg& a : t.args) {
    append(&a.record, sizeof(ArgRecord));
    append(a.shape, a.record.ndim * sizeof(uint64_t));
    append(a.strides, a.record.ndim * sizeof(uint64_t));
  }
  append(t.scalars.data(), t.scalars.size() * sizeof(uint64_t));
  append(t.payload.data(), t.payload.size());
  return out;
}

void check_runs(size_t i, const DecodedArg& a) {
  uint64_t runs = 0;
  uint64_t covered = 0;
  for_each_run(a, [&](size_t offset, size_t bytes) {
    ++runs;
    covered += bytes;
    rankflow::fuzz::expect(offset <= a.record.extent && bytes <= a.record.extent - offset,
                           "argument " + std::to_string(i) + ": a run of " + std::to_string(bytes) +
                               " bytes at " + std::to_string(offset) + " leaves its extent of " +
                               std::to_string(a.record.extent));
    rankflow::fuzz::expect(runs <= a.record.bytes,
                           "argument " + std::to_string(i) + ": more runs than bytes");
  });
  rankflow::fuzz::expect(covered == a.record.bytes, "argument " + std::to_string(i) +
                                                        ": its runs cover " +
                                                        std::to_string(covered) + " bytes of " +
                                                        std::to_string(a.record.bytes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rankflow::fuzz::expect;
  const auto* in = reinterpret_cast<const std::byte*>(data);
  DecodedTask task;
  if (!rankflow::fuzz::refused_or_ran<TransportError>([&] { decode_task(in, size, task); },
                                                      "decode_task", "malformed task descriptor")) {
    return 0;
  }
  const std::vector<std::byte> again = reencode(task);
  expect(again.size() == task.header.total_bytes && again.size() <= size &&
             std::memcmp(again.data(), in, again.size()) == 0,
         "the decoded descriptor does not re-encode to its " +
             std::to_string(task.header.total_bytes) + " bytes");
  if (task.header.kind == DescKind::kEndRun) return 0;
  for (size_t i = 0; i < task.args.size(); ++i) {
    const DecodedArg& a = task.args[i];
    expect(a.record.access <= static_cast<uint32_t>(Access::kNoDep),
           "argument " + std::to_string(i) + " decoded with access " +
               std::to_string(a.record.access));
    if (a.record.space == kDomainSpace) {
      expect(a.record.offset <= UINT32_MAX, "argument " + std::to_string(i) +
                                                " decoded as domain " +
                                                std::to_string(a.record.offset));
      continue;
    }
    const bool child = a.record.space == kChildSpace;
    if (rankflow::fuzz::refused_or_ran<TransportError>(
            [&] { check_arg(i, a, child ? "child" : "arena", child ? kChildBytes : kArenaBytes); },
            "check_arg", "argument")) {
      check_runs(i, a);
    }
  }
  return 0;
}
