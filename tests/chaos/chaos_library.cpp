// Chaos cases of library-mode collectives (issue 12), one per mode, each run under mpirun by
// CTest with RANKFLOW_TIMEOUT_S=2. Each must end with a clear Error on the ranks that see the
// fault, and leave the communicator usable where the header says it stays usable.
//
//   staging-oom   an allreduce on user buffers too large for memory (the address space is
//                 capped, UCX_ALLOC_PRIO=heap): a TransportError on every rank; set_timeout
//                 and the next small allreduce work.
//   alloc-oom     Communicator::alloc of more than memory: a TransportError, and the next
//                 allreduce works.
//   split-absent  one member never calls split: the others get Timeout naming the operation.
//   peer-absent   one member never enters an allreduce: the others get Timeout naming rank,
//                 operation and peer.
//   hand-off-absent      the same after one 4 MiB plain allreduce together, at the second.
//   reading-peer-absent  with RANKFLOW_CROSS_MEMORY_DIRECTION=read: two 4 MiB plain allreduces
//                        together, the second read from the peers' inputs (counted on shared
//                        memory), then member 0 offers to read in a third, stages nothing and
//                        waits, and member 1 never comes: a Timeout naming rank, operation and
//                        peer.
//   streaming-peer-absent  with RANKFLOW_MACHINE=intel-emr: a 16 MiB plain allreduce
//                        together, its parts streamed (no kernel copy on shared memory), then
//                        member 1 never enters the second: a Timeout naming rank, operation and
//                        peer (at the call's first round, which every twophase path shares).
//   growth-absent        with set_timeout(300 ms) (RANKFLOW_TIMEOUT_S=30): one member never
//                        enters a plain allreduce whose staging window must grow. The other
//                        gets Timeout within the communicator's limit, naming rank, operation
//                        and the limit's setter, not RANKFLOW_TIMEOUT_S's after 30 s.
//   split-absent-limited, register-absent-limited: split-absent and register-absent with
//                        set_timeout(300 ms) (RANKFLOW_TIMEOUT_S=30): the Timeout comes within
//                        the communicator's limit and names it.
//   register-absent      one member never calls register_buffer: the others get Timeout
//                        naming the operation.
//   registered-absent    both register their arrays, then one member never enters the
//                        allreduce on them (in place on shared pages): the others get Timeout
//                        naming rank, operation and peer.
//   start-absent         one rank never starts rankflow (no Worker, no Communicator): the
//                        other's Communicator::from_mpi gets Timeout at start-up after the 2 s
//                        limit, naming the wait and the variable that limits it
//                        (RANKFLOW_STARTUP_TIMEOUT_S=2), instead of hanging in a blocking MPI
//                        call; a second from_mpi is InvalidState (the first one's barrier on
//                        MPI_COMM_WORLD is still pending). The job then ends with MPI_Abort.
//
//   mpirun -n 2 build/tests/chaos_library staging-oom
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "address_space.h"
#include "collectives/process_memory.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace {

int g_rank = 0;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `call`, expecting an Error of type E whose message has every one of `parts`.
template <typename E>
bool expect(const char* what, const std::function<void()>& call,
            const std::vector<const char*>& parts) {
  try {
    call();
  } catch (const E& e) {
    std::printf("[rank %d] %s: %s\n", g_rank, what, e.what());
    for (const char* p : parts) {
      if (!contains(e.what(), p)) {
        std::printf("chaos: FAILED: [rank %d] %s: the error lacks '%s'\n", g_rank, what, p);
        return false;
      }
    }
    return true;
  } catch (const std::exception& e) {
    std::printf("chaos: FAILED: [rank %d] %s: unexpected error: %s\n", g_rank, what, e.what());
    return false;
  }
  std::printf("chaos: FAILED: [rank %d] %s returned normally\n", g_rank, what);
  return false;
}

bool small_allreduce_works(rankflow::Communicator& comm) {
  float x = 1, y = 0;
  comm.allreduce(&x, &y, 1, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
  if (y == static_cast<float>(comm.size())) return true;
  std::printf("chaos: FAILED: [rank %d] the small allreduce gave %g\n", g_rank, y);
  return false;
}

bool staging_oom(rankflow::Communicator& comm) {
  rankflow::chaos::cap_address_space();
  static float x = 1, y = 0;  // never touched: the staging window fails first
  const bool ok = expect<rankflow::TransportError>(
      "allreduce of 32 GiB of user memory",
      [&] {
        comm.allreduce(&x, &y, size_t{1} << 33, rankflow::DType::kF32, rankflow::ReduceOp::kSum,
                       "twophase");
      },
      {});
  // No staging window is left after the failed growth: set_timeout must not need one (it
  // crashed there before 2026-12-06), and the next call makes one.
  comm.set_timeout(std::chrono::seconds(30));
  return ok && small_allreduce_works(comm);
}

bool alloc_oom(rankflow::Communicator& comm) {
  rankflow::chaos::cap_address_space();
  const bool ok =
      expect<rankflow::TransportError>("alloc of 64 GiB", [&] { comm.alloc(size_t{1} << 36); }, {});
  return ok && small_allreduce_works(comm);
}

// The parts a Timeout must name where the communicator's limit is set (limited) or not.
std::vector<const char*> with_limit(std::vector<const char*> parts, bool limited) {
  if (limited) parts.insert(parts.end(), {"within 0.3 s", "Communicator::set_timeout"});
  return parts;
}

bool split_absent(rankflow::Communicator& comm, bool limited) {
  if (limited) comm.set_timeout(std::chrono::milliseconds(300));
  if (comm.rank() == 1) return true;  // never calls split
  return expect<rankflow::Timeout>(
      "split without member 1", [&] { comm.split(0, comm.rank()); },
      with_limit({"Communicator::split", "rank 0"}, limited));
}

bool peer_absent(rankflow::Communicator& comm) {
  if (comm.rank() == 1) return true;  // never enters the allreduce
  float x = 1, y = 0;
  return expect<rankflow::Timeout>(
      "allreduce without member 1",
      [&] { comm.allreduce(&x, &y, 1, rankflow::DType::kF32, rankflow::ReduceOp::kSum); },
      {"rank 0", "peer 1"});
}

// A plain twophase allreduce (sum) of `in` into `out`, as the cases below call it.
void twophase_allreduce(rankflow::Communicator& comm, std::vector<float>& in,
                        std::vector<float>& out) {
  comm.allreduce(in.data(), out.data(), in.size(), rankflow::DType::kF32, rankflow::ReduceOp::kSum,
                 "twophase");
}

// The same call where member 1 never comes: a Timeout whose message has every one of `parts`.
bool twophase_allreduce_times_out(rankflow::Communicator& comm, const char* what,
                                  std::vector<float>& in, std::vector<float>& out,
                                  const std::vector<const char*>& parts) {
  return expect<rankflow::Timeout>(
      what, [&] { twophase_allreduce(comm, in, out); }, parts);
}

// A plain allreduce large enough that owners hand their parts into the peers' recv
// (collectives/part_hand_off.h): once together (the staging window grows to fit), then member 0
// publishes where its recv is and waits, and member 1 never comes. A Timeout naming the rank,
// the peer and the call, not a hang.
bool hand_off_absent(rankflow::Communicator& comm) {
  static std::vector<float> in(size_t{1} << 20, 1.0f), out(in.size());  // outlive the MPI_Abort
  twophase_allreduce(comm, in, out);
  if (out.front() != 2.0f || out.back() != 2.0f) {
    std::printf("chaos: FAILED: [rank %d] the allreduce both entered gave %g\n", g_rank, out[0]);
    return false;
  }
  if (comm.rank() == 1) return true;  // never enters the second allreduce
  return twophase_allreduce_times_out(comm, "a 4 MiB plain allreduce without member 1", in, out,
                                      {"rank 0", "peer 1", "allreduce"});
}

bool reading_peer_absent(rankflow::Communicator& comm) {
  static std::vector<float> in(size_t{1} << 20, 1.0f), out(in.size());  // outlive the MPI_Abort
  auto together = [&] {
    twophase_allreduce(comm, in, out);
    return out.front() == 2.0f && out.back() == 2.0f;
  };
  // The first call's kernel writes let the second one read (a member offers only then).
  const bool first = together();
  const uint64_t before = rankflow::coll::process_memory_reads();
  const bool second = together();
  const uint64_t reads = rankflow::coll::process_memory_reads() - before;
  const char* tls = std::getenv("UCX_TLS");
  const bool mapped = tls == nullptr || !contains(tls, "tcp");  // over TCP nobody is mapped
  if (!first || !second || (mapped && reads == 0)) {
    std::printf("chaos: FAILED: [rank %d] the calls together gave %g, %s (%llu kernel reads)\n",
                g_rank, out[0], first && second ? "right" : "wrong",
                static_cast<unsigned long long>(reads));
    return false;
  }
  if (comm.rank() == 1) return true;  // never enters the third allreduce
  return twophase_allreduce_times_out(comm, "a 4 MiB plain allreduce, reading, without member 1",
                                      in, out, {"rank 0", "peer 1", "allreduce"});
}

// The plain twophase allreduce whose parts are streamed through the windows into recv
// (TwophaseSegments::streams_from: 16 MiB under the intel-emr profile).
bool streaming_peer_absent(rankflow::Communicator& comm) {
  static std::vector<float> in(size_t{1} << 22, 1.0f), out(in.size());  // outlive the MPI_Abort
  const uint64_t before =
      rankflow::coll::process_memory_reads() + rankflow::coll::process_memory_writes();
  twophase_allreduce(comm, in, out);
  const uint64_t copies =
      rankflow::coll::process_memory_reads() + rankflow::coll::process_memory_writes() - before;
  if (out.front() != 2.0f || out.back() != 2.0f || copies != 0) {
    std::printf(
        "chaos: FAILED: [rank %d] the streamed call together gave %g (%llu kernel copies)\n",
        g_rank, out[0], static_cast<unsigned long long>(copies));
    return false;
  }
  if (comm.rank() == 1) return true;  // never enters the second allreduce
  return twophase_allreduce_times_out(comm, "a 16 MiB plain allreduce, streamed, without member 1",
                                      in, out, {"rank 0", "peer 1", "allreduce"});
}

// The staging window grows in MPI collectives (window creation and release): their waits take the
// communicator's limit too.
bool growth_absent(rankflow::Communicator& comm) {
  comm.set_timeout(std::chrono::milliseconds(300));
  if (comm.rank() == 1) return true;  // never enters the allreduce
  static std::vector<float> in(size_t{1} << 21, 1.0f), out(in.size());  // outlive the MPI_Abort
  return twophase_allreduce_times_out(
      comm, "an 8 MiB plain allreduce (the staging window grows) without member 1", in, out,
      {"rank 0", "allreduce", "staging window", "within 0.3 s", "Communicator::set_timeout"});
}

bool register_absent(rankflow::Communicator& comm, bool limited) {
  if (limited) comm.set_timeout(std::chrono::milliseconds(300));
  if (comm.rank() == 1) return true;  // never registers
  std::vector<float> data(1 << 16);
  return expect<rankflow::Timeout>(
      "register_buffer without member 1",
      [&] { comm.register_buffer(data.data(), data.size() * sizeof(float)); },
      with_limit({"Communicator::register_buffer", "member 0"}, limited));
}

bool registered_absent(rankflow::Communicator& comm) {
  static std::vector<float> in(1 << 18, 1.0f), out(in.size());  // outlive the MPI_Abort
  auto registered_in = comm.register_buffer(in.data(), in.size() * sizeof(float));
  auto registered_out = comm.register_buffer(out.data(), out.size() * sizeof(float));
  if (comm.rank() == 1) return true;  // never enters the allreduce
  const bool ok =
      expect<rankflow::Timeout>("allreduce on registered arrays without member 1",
                                [&] {
                                  comm.allreduce(in.data(), out.data(), in.size(),
                                                 rankflow::DType::kF32, rankflow::ReduceOp::kSum);
                                },
                                {"rank 0", "peer 1", "allreduce"});
  if (in.front() != 1.0f || in.back() != 1.0f) {
    std::printf("chaos: FAILED: [rank %d] the registered input changed\n", g_rank);
    return false;
  }
  return ok;
}

// Rank 1 stays away until rank 0's MPI_Abort ends it; rank 0's verdict is the job's.
int start_absent() {
  if (g_rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(40));
    std::printf("chaos: FAILED: [rank 1] rank 0 did not end the job within 40 s\n");
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  bool ok =
      expect<rankflow::Timeout>("Communicator::from_mpi without rank 1",
                                [] { (void)rankflow::Communicator::from_mpi(MPI_COMM_WORLD); },
                                {"rank 0", "start-up", "every rank of MPI_COMM_WORLD", "within 2 s",
                                 "RANKFLOW_STARTUP_TIMEOUT_S sets the limit"});
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (waited < 1.9 || waited > 20) {
    std::printf("chaos: FAILED: [rank 0] the start-up wait took %.1f s, not its 2 s limit\n",
                waited);
    ok = false;
  }
  // Its barrier on MPI_COMM_WORLD is still pending: starting again is refused, not a hang.
  ok = expect<rankflow::InvalidState>(
           "Communicator::from_mpi again",
           [] { (void)rankflow::Communicator::from_mpi(MPI_COMM_WORLD); },
           {"rank 0", "earlier start-up", "cannot start again", "MPI_Abort"}) &&
       ok;
  if (ok) std::printf("chaos start-absent: passed (the wait took %.1f s)\n", waited);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, ok ? 0 : 1);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "start-absent") return start_absent();
  bool ok = false;
  {
    auto comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    if (mode == "staging-oom")
      ok = staging_oom(comm);
    else if (mode == "alloc-oom")
      ok = alloc_oom(comm);
    else if (mode == "split-absent" || mode == "split-absent-limited")
      ok = split_absent(comm, mode == "split-absent-limited");
    else if (mode == "peer-absent")
      ok = peer_absent(comm);
    else if (mode == "hand-off-absent")
      ok = hand_off_absent(comm);
    else if (mode == "reading-peer-absent")
      ok = reading_peer_absent(comm);
    else if (mode == "streaming-peer-absent")
      ok = streaming_peer_absent(comm);
    else if (mode == "growth-absent")
      ok = growth_absent(comm);
    else if (mode == "register-absent" || mode == "register-absent-limited")
      ok = register_absent(comm, mode == "register-absent-limited");
    else if (mode == "registered-absent")
      ok = registered_absent(comm);
    else
      std::printf("chaos: FAILED: unknown mode '%s'\n", mode.c_str());
    // After a member stayed away the members are out of step: nothing collective follows.
    if (mode.find("-absent") != std::string::npos) {
      int all = ok ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (g_rank == 0 && all) std::printf("chaos %s: passed\n", mode.c_str());
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, all ? 0 : 1);  // the communicator cannot close in step
    }
  }
  int all = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (g_rank == 0 && all) std::printf("chaos %s: passed\n", mode.c_str());
  MPI_Finalize();
  return all ? 0 : 1;
}
