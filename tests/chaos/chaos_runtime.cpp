// Chaos cases of the DAG runtime (issue 12), one per mode, each run under mpirun by CTest with
// RANKFLOW_TIMEOUT_S=2 (T below). Every case ends with a clear Error on the host or a clean end of
// the job, within a few timeouts, naming the rank and what it was doing; none may hang.
//
//   slow-kernel    a kernel runs past the timeout: run(), and a handle's wait() in another run,
//                  throw Timeout naming the task and its chip; the next run() drains the late
//                  task and works.
//   stuck-kernel   a kernel never returns: run() throws Timeout, the next run() throws Timeout
//                  again ("still running"), and close() ends the job with the reason.
//   domain-stall   a domain member stops taking part in a put/signal/wait exchange: its peer's
//                  wait times out, naming rank, operation and peer; the host gets RemoteFailure
//                  and the next run works. Needs 3 ranks.
//   sigkill        a chip is killed with SIGKILL mid-run (no handler runs): mpirun ends the job.
//   host-exit      the host exits during a run: mpirun ends the job.
//   slow-close     the host works for 2.5 T before close(): the chips, already in close, keep
//                  hearing it and close with it.
//   arena-oom      the host cannot allocate its arena (larger than its memory) while the chips
//                  can allocate theirs: init() throws TransportError on every rank, naming who
//                  failed, and the job ends normally.
//   late-init      a chip reaches init() 2.5 T after the host (as a slow-loading rank does):
//                  start-up waits allow RANKFLOW_STARTUP_TIMEOUT_S (default 60 s), so init()
//                  and a run work on every rank.
//   absent-init    as late-init, but later than RANKFLOW_STARTUP_TIMEOUT_S (run with 2 T): the
//                  host's init() reports the start-up wait with the variable that limits it and
//                  ends the job.
//   chip-death     under `mpirun --enable-recovery` (the job outlives a rank): chip 1 of 3 kills
//                  itself mid-task, and the body then posts it another task; the host's run()
//                  throws Timeout naming the chip, its task and the run, the tasks of chips 0
//                  and 2 have finished, and close() ends the job (the surviving chips end when
//                  the host tells them it closes). Needs 4 ranks.
//   start-absent   rank 1 initialises MPI but never starts rankflow; rank 0's Worker, which
//                  initialises MPI itself, waits for it up to the start-up limit
//                  (RANKFLOW_STARTUP_TIMEOUT_S=2), then logs the wait and ends the job: its
//                  MPI_Finalize would wait for rank 1.
//
//   mpirun -n 2 build/tests/chaos_runtime slow-kernel
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "address_space.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int fail(const std::string& what) {
  std::printf("chaos: FAILED: %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

// T: the RANKFLOW_TIMEOUT_S the case runs under.
double limit_s() {
  const char* value = std::getenv("RANKFLOW_TIMEOUT_S");
  return value != nullptr ? std::atof(value) : 120.0;
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// fills its output with 7: the run that follows a chaos case must still compute.
void fill_seven(rankflow::TaskContext& t) {
  for (float& v : t.output<float>(0))
    v = 7;
}

bool healthy_run(rankflow::Worker& worker, rankflow::KernelHandle fill) {
  bool ok = true;
  worker.run([&](rankflow::Orchestrator& orch) {
    auto x = orch.host_tensor<float>({16});
    orch.submit(fill, {rankflow::out(x)}, worker.chips() - 1).wait();
    for (float v : x.host<float>())
      ok = ok && v == 7;
  });
  return ok;
}

// Runs `body`, expecting an Error of type E whose message has every one of `parts`.
template <typename E>
std::string expect_error(rankflow::Worker& worker,
                         const std::function<void(rankflow::Orchestrator&)>& body,
                         std::initializer_list<const char*> parts) {
  try {
    worker.run(body);
  } catch (const E& e) {
    std::printf("chaos: the host caught: %s\n", e.what());
    for (const char* p : parts)
      if (!contains(e.what(), p)) return std::string("the error lacks '") + p + "': " + e.what();
    return "";
  } catch (const std::exception& e) {
    return std::string("unexpected error: ") + e.what();
  }
  return worker.is_host() ? "the run returned normally" : "";
}

// A slow task times out both the run and a handle's plain wait() after about T: each gives up
// once no task finished for T (wait() used to wait 120 s whatever RANKFLOW_TIMEOUT_S said).
int slow_kernel(rankflow::Worker& worker, rankflow::KernelHandle slow,
                rankflow::KernelHandle fill) {
  Clock::time_point gave_up{};  // when the wait threw (the run still ends the late task)
  struct Case {
    const char* name;
    std::function<void(rankflow::Orchestrator&)> body;
    const char* names_the_wait;
  };
  const Case cases[] = {
      {"the run", [&](rankflow::Orchestrator& orch) { orch.submit(slow, {}, 0); }, "run: "},
      {"a handle's wait()",
       [&](rankflow::Orchestrator& orch) {
         rankflow::TaskHandle task = orch.submit(slow, {}, 0);
         try {
           task.wait();
         } catch (const rankflow::Timeout&) {
           gave_up = Clock::now();
           throw;
         }
       },
       "TaskHandle::wait for task "},
  };
  for (const Case& c : cases) {
    const auto start = Clock::now();
    gave_up = {};
    const std::string error =
        expect_error<rankflow::Timeout>(worker, c.body,
                                        {c.names_the_wait, "rank 0 (host) saw no task finish for",
                                         "('slow') on chip worker 0 (rank 1)"});
    if (!error.empty()) return fail(std::string(c.name) + ": " + error);
    if (gave_up == Clock::time_point{}) gave_up = Clock::now();
    const double waited = std::chrono::duration<double>(gave_up - start).count();
    if (worker.is_host() && (waited < 0.9 * limit_s() || waited > 1.5 * limit_s())) {
      return fail(std::string(c.name) + " gave up after " + std::to_string(waited) +
                  " s, not after about " + std::to_string(limit_s()) + " s");
    }
    if (!healthy_run(worker, fill)) return fail("the run after the timeout computed wrong");
  }
  if (worker.is_host()) std::printf("chaos slow-kernel: passed\n");
  return 0;
}

int stuck_kernel(rankflow::Worker& worker, rankflow::KernelHandle stuck) {
  std::string error = expect_error<rankflow::Timeout>(
      worker, [&](rankflow::Orchestrator& orch) { orch.submit(stuck, {}, 0); },
      {"task 1 ('stuck') on chip worker 0 (rank 1)"});
  if (!error.empty()) return fail(error);
  if (worker.is_host()) {
    error = expect_error<rankflow::Timeout>(worker, [](rankflow::Orchestrator&) {},
                                            {"the run 1 that timed out is still running"});
    if (!error.empty()) return fail(error);
    std::printf("chaos stuck-kernel: the second run timed out too; closing\n");
    std::fflush(stdout);
  }
  worker.close();  // ends the job: the chip never leaves its kernel
  return fail("close returned with a chip stuck in its kernel");
}

// Member 0 waits for a signal that member 1, which returns at once, never sends.
void stall_exchange(rankflow::TaskContext& t) {
  rankflow::DomainContext& d = t.domain(0);
  // Half the run's limit: the exchange's own timeout must come before the host's run timeout,
  // which would otherwise race it (both are RANKFLOW_TIMEOUT_S after the last task finished).
  d.team().set_timeout(std::chrono::milliseconds(static_cast<int>(500 * limit_s())));
  if (d.rank() == 0) d.team().wait_signal(0, 1, 1);
}

int domain_stall(rankflow::Worker& worker, rankflow::KernelHandle exchange,
                 rankflow::KernelHandle fill) {
  if (worker.chips() < 2) return fail("domain-stall needs 3 ranks");
  const std::string error = expect_error<rankflow::RemoteFailure>(
      worker,
      [&](rankflow::Orchestrator& orch) {
        auto d = orch.allocate_domain("stall", {0, 1}, 4096);
        orch.submit_group(exchange, {{rankflow::domain_arg(d)}, {rankflow::domain_arg(d)}}, {0, 1});
      },
      {"rank 1", "peer 1", "stall_exchange"});
  if (!error.empty()) return fail(error);
  if (worker.is_host()) std::printf("chaos domain-stall: the host saw the stall\n");
  if (!healthy_run(worker, fill)) return fail("the run after the stalled exchange computed wrong");
  if (worker.is_host()) std::printf("chaos domain-stall: passed\n");
  return 0;
}

int slow_close(rankflow::Worker& worker, rankflow::KernelHandle fill) {
  if (!healthy_run(worker, fill)) return fail("the run computed wrong");
  if (worker.is_host()) sleep_ms(static_cast<int>(2500 * limit_s()));
  worker.close();
  std::printf("chaos slow-close: rank %d closed\n", worker.rank());
  return 0;
}

int sigkill(rankflow::Worker& worker, rankflow::KernelHandle die) {
  worker.run([&](rankflow::Orchestrator& orch) { orch.submit(die, {}, 0).wait(); });
  return fail("the run returned after its chip was killed");
}

int host_exit(rankflow::Worker& worker, rankflow::KernelHandle slow) {
  worker.run([&](rankflow::Orchestrator& orch) {
    orch.submit(slow, {}, 0);
    std::printf("chaos host-exit: the host exits mid-run\n");
    std::fflush(stdout);
    _exit(3);
  });
  return fail("the chip's run returned after the host exited");
}

// Chips 0 and 2 each take about 0.2 s and write 7s; chip 1 dies after 0.1 s, mid-task.
void work_a_while(rankflow::TaskContext& t) {
  sleep_ms(200);
  fill_seven(t);
}

void die_mid_task(rankflow::TaskContext&) {
  sleep_ms(100);
  raise(SIGKILL);
}

int chip_death(rankflow::Worker& worker, rankflow::KernelHandle work, rankflow::KernelHandle die,
               rankflow::KernelHandle fill) {
  if (worker.chips() != 3) return fail("chip-death needs 4 ranks (host + 3 chips)");
  // A run before: the one that loses its chip is run 2, not the first.
  if (!healthy_run(worker, fill)) return fail("the first run computed wrong");
  rankflow::TaskHandle survivors[2];
  rankflow::Tensor outputs[2];
  rankflow::TaskHandle late;  // posted to chip 1 after it died
  uint64_t dying = 0;
  const auto start = Clock::now();
  std::string caught;
  try {
    worker.run([&](rankflow::Orchestrator& orch) {
      outputs[0] = orch.host_tensor<float>({16});
      outputs[1] = orch.host_tensor<float>({16});
      survivors[0] = orch.submit(work, {rankflow::out(outputs[0])}, 0);
      dying = orch.submit(die, {}, 1).id();
      survivors[1] = orch.submit(work, {rankflow::out(outputs[1])}, 2);
      // Chip 1 is dead by the time these finish; the body goes on and posts to it.
      survivors[0].wait();
      survivors[1].wait();
      late = orch.submit(fill, {rankflow::out(orch.host_tensor<float>({16}))}, 1);
    });
    // A surviving chip stays in the run until the job ends: it never gets the run's end.
    return fail(worker.is_host() ? "the run returned normally" : "a chip left the run");
  } catch (const rankflow::Timeout& e) {
    caught = e.what();
  } catch (const std::exception& e) {
    return fail(std::string("unexpected error: ") + e.what());
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("chaos chip-death: the host caught after %.2f s: %s\n", waited, caught.c_str());
  const std::string task = "task " + std::to_string(dying) + " ('die_mid_task')";
  for (const std::string& part :
       {std::string("run 2"), std::string("chip worker 1 (rank 2)"), task})
    if (!contains(caught, part)) return fail("the error lacks '" + part + "'");
  if (waited > 2 * limit_s() + 2) return fail("the run took far longer than the limit");
  if (late.done()) return fail("a task posted to the dead chip finished");
  for (int i = 0; i < 2; ++i) {
    if (!survivors[i].done()) return fail("a surviving chip's task did not finish");
    try {
      survivors[i].wait();
    } catch (const std::exception& e) {
      return fail(std::string("a surviving chip's task failed: ") + e.what());
    }
    for (float v : outputs[i].host<float>())
      if (v != 7) return fail("a surviving chip's task wrote a wrong output");
  }
  std::printf("chaos chip-death: passed (chips 0 and 2 finished; closing ends the job)\n");
  std::fflush(stdout);
  worker.close();  // collective: cannot complete without chip 1, so it ends the job
  return fail("close returned with a chip dead");
}

}  // namespace

// late-init and absent-init: chip 1 (rank 1) arrives at init() 2.5 T (late-init) or 5 T
// (absent-init) after the others.
int late_init(rankflow::Worker& worker, rankflow::KernelHandle fill, const std::string& mode) {
  const double delay_t = mode == "late-init" ? 2.5 : 5.0;
  if (worker.rank() == 1) sleep_ms(static_cast<int>(1000 * delay_t * limit_s()));
  const auto start = Clock::now();
  worker.init();
  if (mode == "absent-init")
    return fail("init() returned with a chip later than the start-up limit");
  if (!healthy_run(worker, fill)) return fail("the run after a late init computed wrong");
  if (worker.is_host()) {
    std::printf("chaos late-init: passed (the host waited %.1f s in init)\n",
                std::chrono::duration<double>(Clock::now() - start).count());
  }
  worker.close();
  return 0;
}

int arena_oom(int argc, char** argv) {
  rankflow::chaos::cap_address_space();
  rankflow::Worker worker(argc, argv, {.host_arena_bytes = size_t{1} << 36});
  try {
    worker.init();
  } catch (const rankflow::TransportError& e) {
    std::printf("chaos: rank %d caught: %s\n", worker.rank(), e.what());
    const bool named = worker.is_host()
                           ? contains(e.what(), "ucp_mem_map of")
                           : contains(e.what(), "member 0 (rank 0) could not allocate");
    if (!named) return fail("the error does not say who could not allocate");
    if (worker.is_host()) std::printf("chaos arena-oom: passed\n");
    return 0;
  }
  return fail("init() succeeded with a 64 GiB arena under a 2 GiB cap");
}

// start-absent: MPI is not initialised yet, so the launcher's variable says which rank this is.
// Rank 1 initialises MPI itself (Open MPI's MPI_Init waits for every rank) but never starts
// rankflow; rank 0's Worker initialises MPI, so rankflow owns it there.
int start_absent(int argc, char** argv) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::string(rank) == "1") {
    MPI_Init(&argc, &argv);
    sleep_ms(40000);  // rank 0's MPI_Abort ends it first
    return fail("rank 1 was not ended by rank 0 within 40 s");
  }
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
  return fail("the Worker started without rank 1");
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "arena-oom") return arena_oom(argc, argv);
  if (mode == "start-absent") return start_absent(argc, argv);
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
    // Past the limit, but done within the next run's drain.
    auto slow = worker.register_kernel(
        "slow", [](rankflow::TaskContext&) { sleep_ms(static_cast<int>(1600 * limit_s())); });
    auto stuck = worker.register_kernel("stuck", [](rankflow::TaskContext&) {
      for (;;)
        sleep_ms(1000);
    });
    auto die =
        worker.register_kernel("die", [](rankflow::TaskContext&) { kill(getpid(), SIGKILL); });
    auto exchange = worker.register_kernel("stall_exchange", stall_exchange);
    auto fill = worker.register_kernel("fill_seven", fill_seven);
    auto work = worker.register_kernel("work_a_while", work_a_while);
    auto die_mid = worker.register_kernel("die_mid_task", die_mid_task);
    if (mode == "late-init" || mode == "absent-init") {
      return late_init(worker, fill, mode);
    }
    worker.init();
    if (mode == "slow-kernel") return slow_kernel(worker, slow, fill);
    if (mode == "stuck-kernel") return stuck_kernel(worker, stuck);
    if (mode == "domain-stall") return domain_stall(worker, exchange, fill);
    if (mode == "slow-close") return slow_close(worker, fill);
    if (mode == "sigkill") return sigkill(worker, die);
    if (mode == "host-exit") return host_exit(worker, slow);
    if (mode == "chip-death") return chip_death(worker, work, die_mid, fill);
    return fail("unknown mode '" + mode + "'");
  } catch (const rankflow::Error& e) {
    return fail(e.what());
  }
}
