// ChipService (see chip_service.h). The chip's main thread.
#include "runtime/chip_service.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rankflow/error.h"
#include "runtime/crash_report.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool written(Access access) {
  return access == Access::kOutput || access == Access::kInOut || access == Access::kOutputExisting;
}

// Calls fn(byte offset from the first element, bytes) for each contiguous run of a strided
// argument's elements, so staged results go back without touching the gaps between them.
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

// Whether an argument's shape and strides reach exactly its bytes, inside its extent (what a
// kernel's view will touch), without overflow.
bool elements_match(const DecodedArg& a) {
  const ArgRecord& r = a.record;
  uint64_t elements = r.ndim > 0 ? 1 : 0;
  uint64_t last = 0;  // index of the last element, in elements
  for (uint32_t d = 0; d < r.ndim; ++d) {
    uint64_t step = 0;
    if (__builtin_mul_overflow(elements, a.shape[d], &elements)) return false;
    if (a.shape[d] == 0) continue;
    if (__builtin_mul_overflow(a.shape[d] - 1, a.strides[d], &step)) return false;
    if (__builtin_add_overflow(last, step, &last)) return false;
  }
  uint64_t bytes = 0, reach = 0;
  if (__builtin_mul_overflow(elements, r.element_bytes, &bytes) || bytes != r.bytes) return false;
  if (elements == 0) return true;
  return !__builtin_mul_overflow(last + 1, r.element_bytes, &reach) && reach <= r.extent;
}

}  // namespace

// Where arguments point in the runtime team's window: resolved once per chip, not per task.
struct ArgSpaces {
  explicit ArgSpaces(const Team& team)
      : arena(team.offset("arena")),
        arena_bytes(team.bytes("arena")),
        child(team.offset("child")),
        child_bytes(team.bytes("child")) {}
  size_t arena;
  size_t arena_bytes;
  size_t child;
  size_t child_bytes;
};

namespace {

// The arguments of one task as the kernel sees them: straight into the host's mapped arena, or
// staged through local copies fetched before and written back after the kernel. Every range is
// checked against the arena it names.
class ChipArgs {
 public:
  ChipArgs(Team& team, const ArgSpaces& spaces, const DecodedTask& task, const ChipDomains& domains,
           int chip)
      : team_(team), spaces_(spaces), task_(task) {
    if (task.args.empty()) return;  // nothing to map or stage
    const size_t arena = spaces.arena;
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
      if (r.space == kChildSpace) {
        check_range(i, task.args[i], "child", spaces.child_bytes);
      } else {
        check_range(i, task.args[i], "arena", spaces.arena_bytes);
      }
      std::byte* data = nullptr;
      if (r.space == kChildSpace) {  // this chip's own child memory
        data = team.local_ptr(spaces.child + r.offset);
      } else {
        data = static_cast<std::byte*>(team.remote_ptr(0, arena + r.offset));
        if (data == nullptr && r.extent > 0) {
          staged_[i].resize(r.extent);
          data = staged_[i].data();
          if (access != Access::kOutput) {
            team.get(0, arena + r.offset, data, r.extent);
            fetched = true;
          }
        }
      }
      const DecodedArg& a = task.args[i];
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
  // A range outside its arena (a descriptor that is not the host's) is an error, not a crash.
  void check_range(size_t i, const DecodedArg& a, const char* buffer, size_t size) const {
    const ArgRecord& r = a.record;
    if (r.offset > size || r.extent > size - r.offset || r.bytes > r.extent) {
      throw TransportError("argument " + std::to_string(i) + " names bytes [" +
                           std::to_string(r.offset) + ", +" + std::to_string(r.extent) +
                           ") outside the " + buffer + " of " + std::to_string(size) + " bytes");
    }
    if (!elements_match(a)) {
      throw TransportError("argument " + std::to_string(i) +
                           "'s shape and strides do not match its " + std::to_string(r.bytes) +
                           " bytes and extent of " + std::to_string(r.extent));
    }
  }

  Team& team_;
  const ArgSpaces& spaces_;
  const DecodedTask& task_;
  std::vector<std::vector<std::byte>> staged_;
  std::vector<TaskContext::Arg> args_;
};

void fill_message(Completion& record, const std::string& message) {
  std::snprintf(record.message, kMessageBytes, "%s", message.c_str());
}

}  // namespace

ChipService::ChipService(Team& team, const KernelTable& kernels,
                         std::shared_ptr<transport::Context> context, int rank)
    : team_(team),
      kernels_(kernels),
      env_{std::move(context), domains_},
      rank_(rank),
      chip_(rank - 1),
      host_shares_core_(env_.context->shares_core_with(0)),
      spaces_(std::make_unique<ArgSpaces>(team)),
      posted_(posted_counter(team)),
      done_(team, 0, done_counter(team, rank - 1)),
      failed_(team, 0, failed_counter(team, rank - 1)) {}

ChipService::~ChipService() = default;

// Waits for descriptor `sequence`. The deadline (RANKFLOW_TIMEOUT_S) restarts at every heartbeat
// of the host, so only a host that is gone or stuck times a chip out.
void ChipService::wait_for_descriptor(uint64_t sequence) {
  Team& t = team_;
  // A host bound to this chip's core cannot post while this chip spins: yield at once.
  transport::SpinHint spin(host_shares_core_ ? transport::Backoff::kSharedCoreSpinPolls
                                             : transport::Backoff::kSpinPolls);
  uint64_t beats = t.signal_value(kHeartbeatSignal);
  for (;;) {
    uint64_t now_beats = beats;
    t.wait_until(
        [&] {
          now_beats = t.signal_value(kHeartbeatSignal);
          return read_counter(t, posted_) >= sequence || now_beats != beats;
        },
        [&] {
          return "chip worker " + std::to_string(chip_) + " (rank " + std::to_string(rank_) +
                 ") heard nothing from the host for " + transport::format_seconds(t.timeout()) +
                 " while waiting for its next task: the host is gone or stuck";
        });
    if (read_counter(t, posted_) >= sequence) return;
    beats = now_beats;
  }
}

void ChipService::run_kernel(const DecodedTask& task) {
  const DescHeader& h = task.header;
  ChipArgs args(team_, *spaces_, task, domains_, chip_);
  TaskContext context(
      {chip_, h.task_id, static_cast<int>(h.group_rank), static_cast<int>(h.group_size)},
      args.take(), task.scalars, CallConfig{static_cast<int>(h.threads), h.scratch_bytes});
  if (const BuiltinKernel* builtin = find_builtin(h.kernel)) {
    builtin->run(env_, context, task.payload);
  } else {
    kernels_.kernel(h.kernel)(context);
  }
  args.write_back();
}

void ChipService::run_task(const DecodedTask& task, Completion& record) {
  const DescHeader& h = task.header;
  std::string_view name = "?";
  try {
    if (find_builtin(h.kernel) == nullptr && !kernels_.has_kernel(h.kernel)) {
      throw TransportError("kernel " + std::to_string(h.kernel) + " is not registered here");
    }
    name = kernels_.name(false, h.kernel);
    crash_report_task(h.task_id, name.data());
    run_kernel(task);
  } catch (const std::exception& e) {
    record.ok = 0;
    fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                             std::to_string(chip_) + ", kernel '" + std::string(name) +
                             "': " + e.what());
  } catch (...) {
    record.ok = 0;
    fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                             std::to_string(chip_) + ", kernel '" + std::string(name) +
                             "': unknown exception");
  }
  crash_report_task(0, nullptr);
}

void ChipService::serve_run() {
  Team& t = team_;
  const size_t ring = t.offset("ring");
  const size_t completions = t.offset("completions");
  std::vector<Completion> records(kRingSlots);
  // Idle chips wait for the host's next task for as long as RANKFLOW_TIMEOUT_S allows between
  // two descriptors; the host's orchestration body must keep submitting or end the run.
  for (;;) {
    const uint64_t sequence = ++sequence_;
    wait_for_descriptor(sequence);
    const uint64_t slot = (sequence - 1) % kRingSlots;
    Completion& record = records[slot];
    record = Completion{};
    record.ok = 1;
    record.start_ns = now_ns();
    bool end_of_run = false;
    try {
      decode_task(t.local_ptr(ring + slot * kDescStride), kDescStride, decoded_);
      record.task_id = decoded_.header.task_id;
      end_of_run = decoded_.header.kind == DescKind::kEndRun;
      if (!end_of_run) run_task(decoded_, record);
    } catch (const std::exception& e) {  // a malformed descriptor
      record.ok = 0;
      fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                               std::to_string(chip_) + ": " + e.what());
    }
    record.end_ns = now_ns();
    t.put(0, completions + (chip_ * kRingSlots + slot) * kCompletionStride, &record,
          used_bytes(record));
    if (!record.ok) failed_.advance();  // before done: the host then reads the record
    done_.advance();
    if (end_of_run) {
      t.flush();
      domains_.close_all();  // collective per domain, in the same order on every member
      return;
    }
  }
}

}  // namespace rankflow::runtime
