// Fuzz target: argument blobs, what a chip hands a kernel from a descriptor besides its header:
// tensor arguments mapped or staged out of the host's arena or the chip's child memory, the
// scalars, and the payload of a built-in kernel.
//
// Feeds: the whole input as a ring slot to decode_task, then the chip's own argument path with
// no MPI: ChipArgs (runtime/chip_args.h) over PlainTeam, a stand-in for the runtime team whose
// host arena and child memory are separate heap blocks of exactly their size (so AddressSanitizer
// sees any byte outside them); an odd task id stages the arena's arguments through local copies
// (UCX_TLS=tcp), an even one maps them. The TaskContext it builds goes to the built-in kernel the
// header names (copy runs as on a chip; allocate_domain's payload goes to decode_domain_desc and
// plan_domain, the part of it that runs before any MPI call), or else to a probe kernel that
// reads every scalar and touches the first and last byte of every element its views reach.
// Staged outputs are then written back.
//
// A failure is: a crash, hang or sanitizer report (a view reaching outside the memory its
// argument names, a staged copy or write-back outside the arena); anything thrown that is not a
// rankflow::Error (a TransportError for a malformed descriptor or payload, InvalidState for a
// domain this chip does not have, InvalidArgument from TaskContext's accessors).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "runtime/builtin_kernels.h"
#include "runtime/chip_args.h"
#include "runtime/domains.h"
#include "runtime/task_codec.h"
#include "transport/team_layout.h"

namespace {

using namespace rankflow;
using namespace rankflow::runtime;

constexpr size_t kArenaOffset = 4096;  // where the arena sits in the host's window
constexpr size_t kArenaBytes = 16 << 10;
constexpr size_t kChildOffset = 1024;  // where child memory sits in the chip's window
constexpr size_t kChildBytes = 4 << 10;

// Team's data path over two plain heap blocks. Offsets are window offsets, as ChipArgs passes
// them; one outside its block is a broken property (check_arg should have refused it).
class PlainTeam {
 public:
  explicit PlainTeam(bool mapped)
      : mapped_(mapped),
        arena_(std::make_unique<std::byte[]>(kArenaBytes)),
        child_(std::make_unique<std::byte[]>(kChildBytes)) {}

  std::byte* local_ptr(size_t offset) const {
    fuzz::expect(offset >= kChildOffset && offset - kChildOffset <= kChildBytes,
                 "local_ptr outside child memory: " + std::to_string(offset));
    return child_.get() + (offset - kChildOffset);
  }
  void* remote_ptr(int peer, size_t offset) const {
    fuzz::expect(peer == 0, "remote_ptr to a peer that is not the host");
    if (!mapped_) return nullptr;
    return arena_.get() + arena_index(offset, 0);
  }
  void get(int peer, size_t offset, void* dst, size_t bytes) {
    fuzz::expect(peer == 0, "get from a peer that is not the host");
    std::memcpy(dst, arena_.get() + arena_index(offset, bytes), bytes);
  }
  void put(int peer, size_t offset, const void* src, size_t bytes) {
    fuzz::expect(peer == 0, "put to a peer that is not the host");
    std::memcpy(arena_.get() + arena_index(offset, bytes), src, bytes);
  }
  void flush() {}

 private:
  static size_t arena_index(size_t offset, size_t bytes) {
    fuzz::expect(offset >= kArenaOffset && offset - kArenaOffset <= kArenaBytes &&
                     bytes <= kArenaBytes - (offset - kArenaOffset),
                 "an access of " + std::to_string(bytes) + " bytes at window offset " +
                     std::to_string(offset) + " outside the arena");
    return offset - kArenaOffset;
  }
  bool mapped_;
  std::unique_ptr<std::byte[]> arena_;
  std::unique_ptr<std::byte[]> child_;
};

// Touches the first and last byte of every element of argument i that its view reaches (up to
// a budget of elements per task), writing them when the kernel may write.
void touch(const TaskContext& ctx, const DecodedArg& decoded, size_t i, size_t& budget) {
  const View<std::byte> v = ctx.view<std::byte>(i);
  const size_t element = decoded.record.element_bytes;
  const size_t ndim = v.shape().size();
  if (element == 0 || ndim == 0 || v.size() == 0) return;
  const bool write = written(static_cast<Access>(decoded.record.access));
  size_t index[kMaxDims] = {};
  for (;;) {
    if (budget-- == 0) return;
    size_t offset = 0;
    for (size_t d = 0; d < ndim; ++d)
      offset += index[d] * v.strides()[d];
    volatile std::byte* first = v.data() + offset * element;
    volatile std::byte* last = first + element - 1;
    if (write) {
      *first = std::byte{1};
      *last = std::byte{2};
    } else {
      (void)*first;
      (void)*last;
    }
    size_t d = ndim;
    while (d > 0 && ++index[d - 1] == v.shape()[d - 1])
      index[--d] = 0;
    if (d == 0) return;
  }
}

void probe_kernel(TaskContext& ctx, const DecodedTask& task) {
  for (size_t s = 0; s <= ctx.scalars(); ++s) {  // one past the end: InvalidArgument
    fuzz::refused_or_ran<InvalidArgument>([&] { (void)ctx.scalar<uint64_t>(s); }, "scalar");
  }
  size_t budget = 1 << 14;
  for (size_t i = 0; i < ctx.args(); ++i) {
    touch(ctx, task.args[i], i, budget);
    fuzz::refused_or_ran<InvalidArgument>(
        [&] {
          const auto span = ctx.input<std::byte>(i);
          for (size_t k = 0; k < span.size(); k += 61)
            (void)*static_cast<volatile const std::byte*>(&span[k]);
          if (!span.empty()) (void)*static_cast<volatile const std::byte*>(&span.back());
        },
        "TaskContext::input");
  }
}

// The part of allocate_domain that runs on chip worker 0 of 64 before any MPI call.
void plan_payload(std::span<const std::byte> payload) {
  const DomainDesc desc = decode_domain_desc(payload, static_cast<int>(kMaxDomainMembers), 0);
  const DomainPlan plan = plan_domain(desc);
  transport::TeamLayout layout(plan.buffers, Team::kDefaultSignalSlots);
  (void)layout;
}

void run(const DecodedTask& task) {
  PlainTeam team((task.header.task_id & 1) == 0);
  const ArgSpaces spaces{kArenaOffset, kArenaBytes, kChildOffset, kChildBytes};
  ChipDomains domains;  // none: a domain argument names a domain this chip does not have
  ChipArgs<PlainTeam> args(team, spaces, task, domains, /*chip=*/0);
  const DescHeader& h = task.header;
  TaskContext context(
      {0, h.task_id, static_cast<int>(h.group_rank), static_cast<int>(h.group_size)}, args.take(),
      task.scalars, CallConfig{static_cast<int>(h.threads), 0});
  if (h.kernel == kCreateDomainKernel) {
    plan_payload(task.payload);
  } else if (const BuiltinKernel* builtin = find_builtin(h.kernel)) {
    ChipEnv env{nullptr, domains};
    builtin->run(env, context, task.payload);
  } else {
    probe_kernel(context, task);
  }
  args.write_back();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DecodedTask task;
  if (!fuzz::refused_or_ran<TransportError>(
          [&] { decode_task(reinterpret_cast<const std::byte*>(data), size, task); },
          "decode_task")) {
    return 0;
  }
  if (task.header.kind == DescKind::kEndRun) return 0;
  fuzz::refused_or_ran<Error>([&] { run(task); }, "the chip's argument path");
  return 0;
}
