// ChipArgs: the arguments of one decoded task as a chip's kernel sees them, straight into the
// host's mapped arena or staged through local copies fetched before and written back after the
// kernel. It owns the checks of every argument against the arena it names (check_arg, a pure
// function) and the walk over a strided argument's contiguous runs (for_each_run). ChipArgs is a
// template over the team it reads and writes (rankflow::Team in ChipService; a plain-memory
// stand-in in fuzz/arg_blob_fuzz.cpp), so the same code runs without MPI. The chip's main
// thread, for the length of each task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "rankflow/runtime.h"
#include "runtime/domains.h"
#include "runtime/task_codec.h"

namespace rankflow::runtime {

// Where arguments point in the runtime team's window: resolved once per chip, not per task.
struct ArgSpaces {
  size_t arena;  // offset of the host's arena (in the host's window)
  size_t arena_bytes;
  size_t child;  // offset of this chip's child memory (in its own window)
  size_t child_bytes;
};

// Whether an argument's shape and strides reach exactly its bytes, inside its extent (what a
// kernel's view will touch), without overflow.
bool elements_match(const DecodedArg& a);

// Argument `i` (a tensor, not a domain) inside `buffer` ("arena" or "child") of `size` bytes,
// with a shape and strides that match its bytes and extent. A descriptor that is not the host's
// is an error, not a crash: TransportError naming the argument and what was wrong.
void check_arg(size_t i, const DecodedArg& a, const char* buffer, size_t size);

inline bool written(Access access) {
  return access == Access::kOutput || access == Access::kInOut || access == Access::kOutputExisting;
}

// Calls fn(byte offset from the first element, bytes) for each contiguous run of a strided
// argument's elements, so staged results go back without touching the gaps between them. For
// an argument check_arg accepted, every run lies inside its extent.
template <typename Fn>
void for_each_run(const DecodedArg& a, Fn fn) {
  const ArgRecord& r = a.record;
  if (r.bytes == 0 || r.ndim == 0) return;
  if (r.bytes == r.extent) return fn(size_t{0}, static_cast<size_t>(r.extent));
  const uint32_t inner = r.ndim - 1;
  const bool packed_rows = a.strides[inner] == 1;
  const uint32_t outer = packed_rows ? inner : r.ndim;  // dimensions walked one index at a time
  const size_t run = packed_rows ? a.shape[inner] * r.element_bytes : r.element_bytes;
  uint64_t index[kMaxDims] = {};
  for (;;) {
    size_t offset = 0;
    for (uint32_t d = 0; d < outer; ++d)
      offset += index[d] * a.strides[d] * r.element_bytes;
    fn(offset, run);
    uint32_t d = outer;
    while (d > 0 && ++index[d - 1] == a.shape[d - 1])
      index[--d] = 0;
    if (d == 0) return;
  }
}

// The arguments of one task. `TeamT` offers Team's local_ptr, remote_ptr, get, put and flush;
// rank 0 is the host. Every range is checked against the arena it names before it is used.
template <typename TeamT>
class ChipArgs {
 public:
  ChipArgs(TeamT& team, const ArgSpaces& spaces, const DecodedTask& task,
           const ChipDomains& domains, int chip)
      : team_(team), spaces_(spaces), task_(task) {
    if (task.args.empty()) return;  // nothing to map or stage
    bool fetched = false;
    staged_.resize(task.args.size());
    for (size_t i = 0; i < task.args.size(); ++i) {
      const ArgRecord& r = task.args[i].record;
      const auto access = static_cast<Access>(r.access);
      if (r.space == kDomainSpace) {
        args_.push_back(
            {nullptr, 0, {}, access, {}, &domains.find(static_cast<uint32_t>(r.offset), chip)});
        continue;
      }
      const DecodedArg& a = task.args[i];
      std::byte* data = nullptr;
      switch (space_kind(r.space)) {
        case kDomainWindowSpace: {  // this chip's own window of a domain
          Team& window = domains.find(space_domain(r.space), chip).team();
          check_arg(i, a, "domain window", window.window_bytes());
          data = window.local_ptr(r.offset);
          break;
        }
        case kChildSpace:  // this chip's own child memory
          check_arg(i, a, "child", spaces.child_bytes);
          data = team.local_ptr(spaces.child + r.offset);
          break;
        default:
          check_arg(i, a, "arena", spaces.arena_bytes);
          data = host_arena(i, access, fetched);
      }
      args_.push_back({data, r.bytes, Dims(a.shape, r.ndim), access, Dims(a.strides, r.ndim)});
    }
    if (fetched) team.flush();
  }

  // Writes staged outputs back to the host (they land before the completion signal): the
  // elements only, so other tasks' elements between a strided view's rows stay untouched.
  void write_back() {
    if (task_.args.empty()) return;
    const size_t arena = spaces_.arena;
    bool put = false;
    for (size_t i = 0; i < task_.args.size(); ++i) {
      const DecodedArg& a = task_.args[i];
      if (!written(static_cast<Access>(a.record.access)) || a.record.space != kHostSpace ||
          staged_[i].empty()) {
        continue;
      }
      for_each_run(a, [&](size_t offset, size_t bytes) {
        team_.put(0, arena + a.record.offset + offset, staged_[i].data() + offset, bytes);
      });
      put = true;
    }
    if (put) team_.flush();
  }

  std::vector<TaskContext::Arg> take() { return std::move(args_); }

 private:
  // Argument `i` in the host's arena: in place through the mapped window, or staged (fetched
  // unless it is only written).
  std::byte* host_arena(size_t i, Access access, bool& fetched) {
    const ArgRecord& r = task_.args[i].record;
    const size_t at = spaces_.arena + r.offset;
    auto* data = static_cast<std::byte*>(team_.remote_ptr(0, at));
    if (data != nullptr || r.extent == 0) return data;
    staged_[i].resize(r.extent);
    if (access != Access::kOutput) {
      team_.get(0, at, staged_[i].data(), r.extent);
      fetched = true;
    }
    return staged_[i].data();
  }

  TeamT& team_;
  const ArgSpaces& spaces_;
  const DecodedTask& task_;
  std::vector<std::vector<std::byte>> staged_;
  std::vector<TaskContext::Arg> args_;
};

}  // namespace rankflow::runtime
