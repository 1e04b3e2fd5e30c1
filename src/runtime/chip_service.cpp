// ChipService (see chip_service.h). The chip's main thread.
#include "runtime/chip_service.h"

#include <functional>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/chip_args.h"
#include "runtime/crash_report.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

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
      spaces_(std::make_unique<ArgSpaces>(ArgSpaces{team.offset("arena"), team.bytes("arena"),
                                                    team.offset("child"), team.bytes("child")})),
      posted_(posted_counter(team)),
      done_(team, 0, done_counter(team, rank - 1)),
      failed_(team, 0, failed_counter(team, rank - 1)) {}

ChipService::~ChipService() = default;

// Waits for descriptor `sequence`, or for the host to close the worker while this run is open
// (the host ends the job: WorkerImpl::tell_chips_the_job_ends).
void ChipService::wait_for_descriptor(uint64_t sequence) {
  bool closing = false;
  wait_for_host(
      [&] {
        if (read_counter(team_, posted_) >= sequence) return true;
        // The closing signal comes after every descriptor of the run: read after it (acquire),
        // the counter shows them all.
        closing = team_.signal_value(kClosingSignal) > 0 && read_counter(team_, posted_) < sequence;
        return closing;
      },
      "its next task");
  if (closing) host_closed_during_run();
}

void ChipService::host_closed_during_run() const {
  log::error("chip worker ", chip_, " (rank ", rank_, "): the host closed the worker while run ",
             runs_,
             " was still open here: the host ends the job after a run it could not finish "
             "(its error says why), or this rank called run() more often than the host; "
             "ending this process (MPI_Abort)");
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

void ChipService::wait_for_close() {
  wait_for_host([&] { return team_.signal_value(kClosingSignal) > 0; }, "the worker's close");
}

// Waits until `ready()`. The deadline (RANKFLOW_TIMEOUT_S) restarts at every heartbeat of the
// host, so only a host that is gone or stuck times a chip out.
void ChipService::wait_for_host(const std::function<bool()>& ready, const char* what) {
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
          return ready() || now_beats != beats;
        },
        [&] {
          return "chip worker " + std::to_string(chip_) + " (rank " + std::to_string(rank_) +
                 ") heard nothing from the host for " + transport::format_seconds(t.timeout()) +
                 " while waiting for " + what + ": the host is gone or stuck";
        });
    if (ready()) return;
    beats = now_beats;
  }
}

void ChipService::run_kernel(const DecodedTask& task) {
  const DescHeader& h = task.header;
  ChipArgs<Team> args(team_, *spaces_, task, domains_, chip_);
  TaskContext context(
      {chip_, h.task_id, static_cast<int>(h.group_rank), static_cast<int>(h.group_size)},
      args.take(), task.scalars,
      CallConfig{static_cast<int>(h.threads),
                 h.scratch_bytes,
                 {h.ring_task_window, h.ring_heap, h.ring_dep_pool}});
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

// Whether every descriptor that `ring_deps` names (bit k: k + 1 places before `sequence`)
// succeeded. Each ran before this one (the ring runs in order), and fewer than kRingSlots places
// back, so its outcome is still in its slot.
bool ChipService::streamed_predecessors_ok(uint64_t sequence, uint32_t ring_deps) const {
  for (uint32_t back = 1; ring_deps != 0; ++back, ring_deps >>= 1) {
    if ((ring_deps & 1) == 0) continue;
    if (back >= sequence) {
      throw TransportError("malformed task descriptor: it follows descriptor " +
                           std::to_string(back) + " places back, before this chip's first");
    }
    if (succeeded_[(sequence - back - 1) % kRingSlots] == 0) return false;
  }
  return true;
}

void ChipService::serve_run() {
  Team& t = team_;
  const size_t ring = t.offset("ring");
  const size_t completions = t.offset("completions");
  std::vector<Completion> records(kRingSlots);
  ++runs_;
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
      if (!end_of_run && streamed_predecessors_ok(sequence, decoded_.header.ring_deps)) {
        run_task(decoded_, record);
      } else if (!end_of_run) {
        record.ok = 0;  // the host skips it too, when it reads the predecessor's failure
        fill_message(record, "skipped: a task it follows on chip worker " + std::to_string(chip_) +
                                 " did not succeed");
      }
    } catch (const std::exception& e) {  // a malformed descriptor
      record.ok = 0;
      fill_message(record, "rank " + std::to_string(rank_) + ", chip worker " +
                               std::to_string(chip_) + ": " + e.what());
    }
    record.end_ns = now_ns();
    succeeded_[slot] = record.ok;
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
