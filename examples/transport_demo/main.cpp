// transport_demo: rankflow's transport layer across ranks in a ring.
//
// Each rank streams blocks of several sizes to its right neighbour through a symmetric window
// (direct stores where the neighbour's memory is mapped, UCX puts otherwise), signalling each
// block and waiting for a credit back. Every received byte is checked. Then all ranks hammer one
// atomic counter and run a burst of barriers. Rank 0 prints what moved and how fast.
//
//   mpirun -n 3 build/examples/transport_demo/transport_demo [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rankflow/error.h"
#include "transport/context.h"
#include "transport/team_state.h"

namespace {

using Clock = std::chrono::steady_clock;
using rankflow::Team;
using rankflow::transport::Context;

constexpr uint32_t kData = 0;    // signal slot: blocks delivered to me
constexpr uint32_t kCredit = 1;  // signal slot: blocks my right neighbour has consumed

uint8_t pattern(int rank, size_t round, size_t i) {
  return static_cast<uint8_t>(i * 7 + round * 13 + static_cast<size_t>(rank) * 101);
}

double max_over_ranks(Context& context, double value) {
  double result = 0;
  MPI_Request request;
  MPI_Iallreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &request);
  context.mpi_wait(request, "demo result reduction");
  return result;
}

// Streams `rounds` blocks of `bytes` to the right neighbour; returns the seconds spent putting
// them (put until remotely complete), or throws on a corrupted block.
double stream(Team& team, size_t bytes, size_t rounds, uint64_t& sent_so_far) {
  const int me = team.rank(), n = team.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<uint8_t> block(bytes);
  Clock::duration putting{};
  for (size_t round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < bytes; ++i)
      block[i] = pattern(me, round, i);
    // The neighbour's inbox is free once it has consumed everything we sent before.
    team.wait_signal(kCredit, sent_so_far, right);
    const auto start = Clock::now();
    team.put(right, team.offset("inbox"), block.data(), bytes);
    team.flush(right);
    putting += Clock::now() - start;
    team.signal(right, kData);
    ++sent_so_far;
    team.wait_signal(kData, sent_so_far, left);
    const auto inbox = team.local_as<uint8_t>("inbox");
    for (size_t i = 0; i < bytes; ++i) {
      if (inbox[i] != pattern(left, round, i)) {
        throw rankflow::Error(rankflow::ErrorCode::kRemoteFailure,
                              "rank " + std::to_string(me) + ": byte " + std::to_string(i) +
                                  " of block " + std::to_string(round) + " from rank " +
                                  std::to_string(left) + " is wrong");
      }
    }
    team.signal(left, kCredit);
  }
  return std::chrono::duration<double>(putting).count();
}

int run(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  auto context = Context::acquire(&argc, &argv);
  const size_t max_bytes = size_t{8} << 20;
  Team team = rankflow::transport::create_team(context, MPI_COMM_WORLD,
                                               {{"inbox", max_bytes}, {"counter", 8}}, "demo");
  const int me = team.rank(), n = team.size();
  const bool mapped = team.remote_ptr((me + 1) % n, 0) != nullptr;
  if (me == 0) {
    std::printf("rankflow transport demo: %d ranks in a ring, %s\n", n,
                team.all_mapped() ? "peers directly mapped (shared memory)"
                                  : "peers reached through UCX puts (no direct mapping)");
    std::printf("%12s %8s %14s %12s\n", "block", "blocks", "put us", "put GB/s");
  }
  uint64_t sent = 0;
  uint64_t total_bytes = 0;
  for (size_t bytes : {size_t{64}, size_t{4096}, size_t{65536}, size_t{1} << 20, max_bytes}) {
    const size_t rounds = std::max<size_t>(quick ? 2 : 4, (quick ? 8 : 64) * 65536 / bytes);
    const double seconds = max_over_ranks(*context, stream(team, bytes, rounds, sent));
    total_bytes += bytes * rounds * static_cast<size_t>(n);
    if (me == 0) {
      std::printf("%12zu %8zu %14.2f %12.2f\n", bytes, rounds, seconds * 1e6 / rounds,
                  static_cast<double>(bytes * rounds) / seconds / 1e9);
    }
  }

  const int adds = quick ? 1000 : 10000;
  for (int i = 0; i < adds; ++i)
    team.atomic_add(0, team.offset("counter"), 1);
  team.barrier();
  const uint64_t counter = team.local_as<uint64_t>("counter")[0];
  if (me == 0 && counter != static_cast<uint64_t>(adds) * n) {
    std::fprintf(stderr, "atomic counter is %llu, expected %llu\n",
                 static_cast<unsigned long long>(counter),
                 static_cast<unsigned long long>(adds) * n);
    return 1;
  }
  const int barriers = quick ? 1000 : 10000;
  const auto start = Clock::now();
  for (int i = 0; i < barriers; ++i)
    team.barrier();
  const double barrier_us = max_over_ranks(
      *context, std::chrono::duration<double, std::micro>(Clock::now() - start).count() / barriers);
  if (me == 0) {
    std::printf("atomic counter on rank 0: %llu adds from %d ranks, exact\n",
                static_cast<unsigned long long>(counter), n);
    std::printf("barrier: %.2f us each over %d barriers\n", barrier_us, barriers);
    std::printf("moved %.1f MiB in total (%s); all transfers verified\n",
                static_cast<double>(total_bytes) / (1 << 20),
                mapped ? "direct stores" : "UCX puts");
  }
  team.close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
