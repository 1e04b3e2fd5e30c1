// Dispatcher: moves a run's chip tasks between the graph and the chips. One thread at a time
// "drives": it progresses the transport, collects completions (finishing tasks in the graph),
// posts ready tasks to the chips' links, and sends heartbeats. Whoever needs progress drives:
//
//   - the orchestration body's thread, right after each submit (kick: one round, if nobody
//     else is driving), and whenever it waits: for the run to end (finish_run), for a task's
//     handle or for arena memory (wait_until: a round whenever the role is free). On the
//     host's one core this avoids a hand-off to another thread, which costs a context switch
//     each way;
//   - the scheduler thread, when the body is busy elsewhere: while work is outstanding it looks
//     every kWatchEvery and drives only if the body has not driven since its last look; with
//     nothing outstanding it sleeps, waking every kHeartbeatEvery to beat and progress UCX:
//     the chips hear the host as long as the worker is open, in a long body and between runs,
//     and a chip's flush never waits on a host that is busy elsewhere (the progress rule). It wakes
//     at once for work a sub-worker made ready, and when a kick leaves work behind while it sleeps.
//
// The driver role is a DriverLock; a thread that needs it for long (finish_run) raises
// want_drive_ and wakes the scheduler thread, which gives the role up after its round.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "rankflow/team.h"
#include "runtime/chip_link.h"
#include "runtime/driver_lock.h"
#include "runtime/observer.h"
#include "runtime/task_graph.h"
#include "transport/progress.h"

namespace rankflow::runtime {

class Dispatcher {
 public:
  // `shares_core[c]`: chip c is bound to the host's own core (its waits then yield at once).
  Dispatcher(Team& team, TaskGraph& graph, TaskObserver& observer, std::chrono::nanoseconds timeout,
             const std::vector<bool>& shares_core);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // The run that starts executing (each run once, in order: its number counts them).
  void begin_run();
  // Tells every chip the host is closing the worker (no run is open).
  void announce_close();
  // Body thread, after it queued work: one round of driving unless another thread drives.
  void kick();
  // Called under the graph's lock when chip work was queued: wakes the scheduler thread
  // unless the calling thread drives (or is about to kick).
  void chip_work_queued();
  // Waits until `done()` or `deadline` (false then), driving a round whenever the role is free.
  // Any thread (a sub task may wait on a handle while the body drives).
  bool wait_until(const std::function<bool()>& done,
                  std::chrono::steady_clock::time_point deadline);
  // Waits until `done()` as wait_until does, for as long as the run makes progress: Timeout
  // (naming the oldest task in flight) once no task of the run finished for the timeout.
  // `what` names the wait in that Timeout.
  void wait_while_progressing(const std::function<bool()>& done,
                              const std::function<std::string()>& what);
  // Body thread: drives until every task of the executing run finished, then ends the run on
  // every chip. Timeout when no task finishes for the timeout (naming the oldest task in
  // flight); false, the run left open, once `deadline` (if any) has passed.
  bool finish_run(std::optional<std::chrono::steady_clock::time_point> deadline = {});
  // Called before a task's handle waits for task `id` (the scheduler makes its run execute).
  void set_before_wait(std::function<void(uint64_t)> hook) { before_wait_ = std::move(hook); }
  void before_wait(uint64_t id) {
    if (before_wait_) before_wait_(id);
  }
  // Runs `work` holding the driver role, so no other thread progresses UCX meanwhile: for the
  // main thread's own MPI waits between runs (Context::mpi_wait progresses UCX itself).
  void exclusively(const std::function<void()>& work);

  // Marks the calling thread as about to kick (chip_work_queued need not wake anyone).
  class Kicking {
   public:
    Kicking();
    ~Kicking();
  };

 private:
  // One round, the driver role held: collect completions, post what is ready, and (every 16th
  // round) progress UCX and send heartbeats. A kick's round collects only when ready work did
  // not fit. True if anything moved.
  bool pump(bool kick = false);
  bool collect();
  // Posts what is ready and fits; `left`: ready work remains that did not. True if it posted.
  bool post_ready(bool& left);
  void beat_if_due();
  // The scheduler thread's round while nobody needs driving (a long body, or the host's own
  // work between runs): heartbeats, and UCX progress, so that over TCP a chip's flush (its
  // end-of-run acknowledgement) completes while the host does something else.
  void idle_round();
  void loop();  // the scheduler thread
  bool should_take_over(uint64_t& seen_drives);
  void sleep_for_wakeup(std::chrono::nanoseconds d, uint64_t& seen);
  void wake_scheduler_thread();
  // How long to spin before yielding while waiting: briefly when a chip with work in flight
  // shares the host's core (it cannot run while the host spins).
  transport::Backoff fresh_backoff() const;
  friend class DriverRole;
  std::string describe_stall(const std::string& operation, std::chrono::nanoseconds limit) const;
  // team_.flush() that goes on past a dead chip's failed endpoint (TransportError only when
  // every try failed).
  void flush_chips();

  Team& team_;
  TaskGraph& graph_;
  TaskObserver& observer_;
  std::chrono::nanoseconds timeout_;
  std::deque<ChipLink> links_;      // by chip (a deque: a link does not move)
  struct Rounds {                   // pump()'s own state (the driver's)
    bool mapped = false;            // every window is mapped: posts are plain stores
    uint32_t count = 0;             // to progress UCX every 16th round when mapped
    std::vector<uint32_t> room;     // scratch, kept to allocate nothing per round
    std::vector<Posting> postings;  // scratch
    std::chrono::steady_clock::time_point last_beat{};
  } rounds_;
  DriverLock driver_;                 // held by the driving thread
  std::atomic<int> want_drive_{0};    // body threads waiting for the driver role
  std::atomic<uint64_t> drives_{0};   // rounds body threads drove (a heuristic for the watch)
  std::atomic<uint64_t> wakeups_{0};  // calls of chip_work_queued() from other threads
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> dozing_{false};  // the scheduler thread sleeps long (nothing to watch)
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::function<void(uint64_t)> before_wait_;
  std::vector<bool> end_posted_;  // per chip: finish_run posted this run's end (driver role)
  std::atomic<uint64_t> executing_run_{0};  // the number of the run executing (begin_run)
};

}  // namespace rankflow::runtime
