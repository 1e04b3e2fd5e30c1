// Dispatcher (see dispatcher.h). pump() runs on whichever thread holds the driver role; loop()
// is the scheduler thread.
#include "runtime/dispatcher.h"

#include <algorithm>

#include "rankflow/error.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

// While work is outstanding the scheduler thread looks this often whether the body still
// drives; after the last outstanding task it keeps looking this long, so back-to-back runs
// need no wake-up call.
constexpr std::chrono::microseconds kWatchEvery{100};
constexpr std::chrono::milliseconds kLinger{20};
// While a run is open the host tells every chip it is alive this often, so chips waiting for
// the next task restart their RANKFLOW_TIMEOUT_S deadline instead of giving up on a long body.
constexpr std::chrono::milliseconds kHeartbeatEvery{250};

thread_local bool t_driving = false;  // this thread holds the driver role or is about to kick

using Clock = std::chrono::steady_clock;

// This host's clock as the chips stamp theirs (chip_service.cpp) and sub-workers their spans.
uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

// Holds the role for one round, if it is free.
class RoundRole {
 public:
  explicit RoundRole(DriverLock& driver) : driver_(driver), held_(driver.try_lock()) {
    if (held_) t_driving = true;
  }
  ~RoundRole() {
    if (!held_) return;
    t_driving = false;
    driver_.unlock();
  }
  bool held() const { return held_; }

 private:
  DriverLock& driver_;
  bool held_;
};

}  // namespace

// Holds the driver role for a long wait (finish_run, begin_run): asks the scheduler thread to
// give it up at the end of its round.
class DriverRole {
 public:
  explicit DriverRole(Dispatcher& d) : d_(d) {
    d_.want_drive_.fetch_add(1);
    if (!d_.driver_.try_lock()) {
      d_.wake_scheduler_thread();  // it holds the role, perhaps backing off: it lets go
      d_.driver_.lock();
    }
    t_driving = true;
  }
  ~DriverRole() {
    t_driving = false;
    d_.driver_.unlock();
    d_.want_drive_.fetch_sub(1);
    bump(d_.drives_);
  }

 private:
  Dispatcher& d_;
};

Dispatcher::Kicking::Kicking() {
  t_driving = true;
}
Dispatcher::Kicking::~Kicking() {
  t_driving = false;
}

Dispatcher::Dispatcher(Team& team, TaskGraph& graph, TaskObserver& observer,
                       std::chrono::nanoseconds timeout, const std::vector<bool>& shares_core)
    : team_(team), graph_(graph), observer_(observer), timeout_(timeout) {
  rounds_.mapped = team.mapped_everywhere();
  const int chips = team.size() - 1;
  for (int c = 0; c < chips; ++c)
    links_.emplace_back(team, c, c < static_cast<int>(shares_core.size()) && shares_core[c]);
  rounds_.room.resize(chips);
  thread_ = std::thread([this] { loop(); });
}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard lock(sleep_mutex_);
    shutdown_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Dispatcher::begin_run() {
  DriverRole role(*this);  // the scheduler thread may still be pumping a failed run's rest
  rounds_.last_beat = Clock::now();
  executing_run_.fetch_add(1, std::memory_order_relaxed);
  end_posted_.assign(links_.size(), false);
}

void Dispatcher::announce_close() {
  DriverRole role(*this);
  for (ChipLink& link : links_)
    link.announce_close();
  flush_chips();
}

void Dispatcher::flush_chips() {
  for (size_t failed = 0;; ++failed) {
    try {
      team_.flush();
      return;
    } catch (const TransportError&) {
      // A dead chip's endpoint (its next transfer loses its link); the others' flushes are
      // still pending, and the next call completes them.
      if (failed == links_.size()) throw;
    }
  }
}

void Dispatcher::wake_scheduler_thread() {
  { std::lock_guard lock(sleep_mutex_); }  // it is asleep, or will see what changed
  wake_.notify_all();
}

void Dispatcher::chip_work_queued() {
  if (t_driving) return;
  wakeups_.fetch_add(1);
  wake_scheduler_thread();
}

bool Dispatcher::collect() {
  const bool spans = observer_.wants_spans();
  bool moved = false;
  for (ChipLink& link : links_) {
    moved |= link.collect(
        [&](const std::shared_ptr<TaskState>& task, bool ok, const Completion* r) {
          // Skipped by the host while in flight (a streamed predecessor failed): the chip's
          // record only confirms it, for the graph and the observers alike.
          if (terminal(task->status.load(std::memory_order_relaxed))) return;
          TaskSpan span{link.chip(), r ? r->start_ns : 0, r ? r->end_ns : 0, ok};
          if (r) span.lag_ns = static_cast<int64_t>(steady_ns() - r->end_ns);
          observer_.task_left(*task, span);
          graph_.finish(task, ok, r ? r->message : "");
        },
        spans);
  }
  return moved;
}

bool Dispatcher::post_ready(bool& left) {
  for (size_t c = 0; c < links_.size(); ++c)
    rounds_.room[c] = links_[c].room();
  rounds_.postings.clear();
  left = graph_.take_ready(rounds_.room, rounds_.postings);
  for (Posting& p : rounds_.postings) {
    const int chip = p.task->workers[p.member];
    links_[chip].post(std::move(p.task), p.member);
  }
  return !rounds_.postings.empty();
}

bool Dispatcher::pump(bool kick) {
  // Over mapped memory every post and completion is a plain store: UCX needs progress only
  // now and then (as Team::wait_until does).
  const bool periodic = (++rounds_.count & 15) == 0;
  if (!rounds_.mapped || periodic) team_.progress();
  bool moved = false;
  bool left = false;
  // Right after a submit, post first and read the chips' completion counters (a cache miss
  // each) only when the new task did not go out: it waits for others, or a ring is full.
  if (!kick) moved |= collect();
  const bool posted = post_ready(left);
  moved |= posted;
  if (kick && (left || !posted)) {
    moved |= collect();
    moved |= post_ready(left);
  }
  if (periodic) beat_if_due();
  return moved;
}

transport::Backoff Dispatcher::fresh_backoff() const {
  for (const ChipLink& link : links_) {
    if (link.shares_core() && !link.idle()) {
      return transport::Backoff(transport::Backoff::kSharedCoreSpinPolls);
    }
  }
  return transport::Backoff(transport::Backoff::kSpinPolls);
}

void Dispatcher::beat_if_due() {
  const auto now = Clock::now();
  if (now - rounds_.last_beat < kHeartbeatEvery) return;
  rounds_.last_beat = now;
  for (ChipLink& link : links_)
    link.beat();
}

void Dispatcher::exclusively(const std::function<void()>& work) {
  DriverRole role(*this);
  work();
}

void Dispatcher::idle_round() {
  RoundRole role(driver_);
  if (!role.held()) return;
  beat_if_due();
  team_.progress();
}

void Dispatcher::kick() {
  bool held = false;
  {
    RoundRole role(driver_);
    held = role.held();
    if (held) pump(/*kick=*/true);
  }
  if (!held) {
    // Another thread has the role: most often the scheduler thread, which shares this core
    // and may have been preempted holding it. Wait for it to let go (it does after its round
    // once a body thread wants to drive) rather than leave it this and every later kick.
    DriverRole role(*this);
    pump(/*kick=*/true);
  }
  bump(drives_);
  // Work left behind while the scheduler thread sleeps long: it should watch again.
  if (dozing_.load(std::memory_order_relaxed) && graph_.outstanding() > 0) {
    wake_scheduler_thread();
  }
}

bool Dispatcher::wait_until(const std::function<bool()>& done, Clock::time_point deadline) {
  transport::Backoff backoff = fresh_backoff();
  uint64_t seen = wakeups_.load();
  while (!done()) {
    bool moved = false;
    {
      RoundRole role(driver_);
      if (role.held()) moved = pump();
    }
    if (moved) {
      bump(drives_);
      backoff = fresh_backoff();
      continue;
    }
    if (Clock::now() >= deadline) return done();  // a yield may take a whole time slice
    backoff.pause([&](std::chrono::microseconds d) { sleep_for_wakeup(d, seen); });
  }
  return true;
}

void Dispatcher::wait_while_progressing(const std::function<bool()>& done,
                                        const std::function<std::string()>& what) {
  // Looks at the run's progress four times per timeout: a stall is reported within 1.25x.
  const auto look_every = std::max<std::chrono::nanoseconds>(timeout_ / 4, kWatchEvery);
  uint64_t seen = graph_.finished();
  auto last_progress = Clock::now();
  while (!wait_until(done, Clock::now() + look_every)) {
    const auto now = Clock::now();
    if (graph_.finished() != seen) {
      seen = graph_.finished();
      last_progress = now;
    } else if (now - last_progress >= timeout_) {
      throw Timeout(describe_stall(what(), timeout_));
    }
  }
}

bool Dispatcher::finish_run(std::optional<Clock::time_point> deadline) {
  DriverRole role(*this);
  uint64_t seen = graph_.finished();
  uint64_t seen_wakeups = wakeups_.load();
  auto last_progress = Clock::now();
  transport::Backoff backoff = fresh_backoff();
  uint32_t rounds = 0;
  while (graph_.outstanding() > 0) {
    if (pump()) {
      backoff = fresh_backoff();
      // A timed wait on a run that keeps moving still gives up at its deadline.
      if (deadline && (++rounds & 63) == 0 && Clock::now() >= *deadline) return false;
      continue;
    }
    if ((backoff.polls() & 63) == 0) {
      const auto now = Clock::now();
      if (graph_.finished() != seen) {
        seen = graph_.finished();
        last_progress = now;
      } else if (now - last_progress > timeout_) {
        throw Timeout(describe_stall("run", timeout_));
      }
      if (deadline && now >= *deadline) return false;
    }
    backoff.pause([&](std::chrono::microseconds d) { sleep_for_wakeup(d, seen_wakeups); });
  }
  // Once per run: a finish retried after its flush threw (a dead chip) only flushes again, or a
  // chip would end its next run at a second marker.
  auto on_done = [&](const std::shared_ptr<TaskState>&, bool, const Completion*) {};
  end_posted_.resize(links_.size(), false);
  for (size_t c = 0; c < links_.size(); ++c) {
    if (end_posted_[c]) continue;
    links_[c].post_end_of_run(on_done);
    end_posted_[c] = true;
  }
  flush_chips();
  return true;
}

// Names the run, and every chip with a task in flight (the oldest task first): when no task
// finished for the limit, each of them is stalled, and the one whose chip died is among them.
// A lost link (a transfer to its chip failed) adds why.
std::string Dispatcher::describe_stall(const std::string& operation,
                                       std::chrono::nanoseconds limit) const {
  std::vector<std::pair<const TaskState*, int>> stalled;  // (oldest task in flight, chip)
  for (const ChipLink& link : links_) {
    if (const TaskState* t = link.oldest_in_flight()) stalled.emplace_back(t, link.chip());
  }
  std::sort(stalled.begin(), stalled.end(),
            [](const auto& a, const auto& b) { return a.first->id < b.first->id; });
  const auto on_chip = [](const TaskState& t, int chip) {
    return "task " + std::to_string(t.id) + " ('" + std::string(t.name) + "') on chip worker " +
           std::to_string(chip) + " (rank " + std::to_string(chip + 1) + ")";
  };
  std::string text = operation + ": rank 0 (host) saw no task finish for " +
                     transport::format_seconds(limit) + " in run " +
                     std::to_string(executing_run_.load(std::memory_order_relaxed)) + "; " +
                     std::to_string(graph_.outstanding()) + " tasks outstanding";
  constexpr size_t kNamed = 4;  // chips named; the rest are counted
  for (size_t i = 0; i < stalled.size() && i < kNamed; ++i) {
    text += (i == 0   ? ", oldest in flight: "
             : i == 1 ? "; also in flight: "
                      : ", ") +
            on_chip(*stalled[i].first, stalled[i].second);
  }
  if (stalled.size() > kNamed) {
    text += " and on " + std::to_string(stalled.size() - kNamed) + " more chips";
  }
  for (const ChipLink& link : links_) {
    if (!link.lost()) continue;
    text += "; chip worker " + std::to_string(link.chip()) + " (rank " +
            std::to_string(link.chip() + 1) + ") is unreachable: " + link.why_lost();
  }
  return text;
}

// Whether the body has stopped driving while work is outstanding.
bool Dispatcher::should_take_over(uint64_t& seen_drives) {
  const uint64_t drives = drives_.load(std::memory_order_relaxed);
  const bool body_drove = drives != seen_drives;
  seen_drives = drives;
  return !body_drove && want_drive_.load() == 0 && graph_.outstanding() > 0;
}

// Sleeps for up to `d`, or until chip_work_queued() is called again.
void Dispatcher::sleep_for_wakeup(std::chrono::nanoseconds d, uint64_t& seen) {
  std::unique_lock lock(sleep_mutex_);
  wake_.wait_for(lock, d, [&] { return shutdown_.load() || wakeups_.load() != seen; });
  seen = wakeups_.load();
}

void Dispatcher::loop() {
  uint64_t seen_drives = 0;
  uint64_t seen_wakeups = 0;
  auto last_active = Clock::now() - kLinger;
  for (;;) {
    {
      std::unique_lock lock(sleep_mutex_);
      const auto now = Clock::now();
      if (graph_.outstanding() > 0) last_active = now;
      const bool watching = now - last_active < kLinger;
      dozing_ = !watching;
      wake_.wait_for(lock, watching ? std::chrono::nanoseconds(kWatchEvery) : kHeartbeatEvery, [&] {
        return shutdown_.load() || wakeups_.load() != seen_wakeups ||
               (!watching && graph_.outstanding() > 0);
      });
      dozing_ = false;
    }
    if (shutdown_) return;
    const bool queued = wakeups_.load() != seen_wakeups;
    seen_wakeups = wakeups_.load();
    if (!should_take_over(seen_drives) && !queued) {
      idle_round();
      continue;
    }
    RoundRole role(driver_);
    if (!role.held()) continue;
    transport::Backoff backoff = fresh_backoff();
    while (!shutdown_ && want_drive_.load() == 0 && graph_.outstanding() > 0) {
      if (pump()) {
        backoff = fresh_backoff();
        continue;
      }
      backoff.pause([&](std::chrono::microseconds d) {
        std::unique_lock lock(sleep_mutex_);
        wake_.wait_for(lock, d, [&] {
          return shutdown_.load() || want_drive_.load() > 0 || wakeups_.load() != seen_wakeups;
        });
        seen_wakeups = wakeups_.load();
      });
    }
    seen_drives = drives_.load(std::memory_order_relaxed);
  }
}

}  // namespace rankflow::runtime
