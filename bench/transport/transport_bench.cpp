// transport_bench: the transport layer between two ranks on two cores, beside memcpy.
//
//   mpirun -n 2 --bind-to core build/bench/rankflow_transport_bench [--quick]
//
// 1. Latency: an 8-byte put followed by a signal, ping-ponged between rank 0 and rank 1; one-way
//    time is half the round trip. Over the direct-mapping path (store + atomic on mapped memory)
//    and over UCX (ucp_put + fence + ucp atomic), which is what ranks on different hosts use.
// 2. Put bandwidth from 4 KiB to 64 MiB: rank 0 writes into rank 1's window, by direct stores
//    into the mapped window and by ucp_put + flush. Beside each, memcpy of the same size on the
//    same core in the same run, and the put's share of it.
// Every figure is the median over batches. Rank 1 checks the data of every size.
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
using rankflow::transport::Window;

constexpr uint32_t kPing = 0;
constexpr uint32_t kDone = 1;
constexpr size_t kMaxBytes = size_t{64} << 20;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Options {
  int batches = 15;
  int latency_iterations = 20000;
  bool quick = false;
};

// One ping-pong batch; returns seconds per one-way trip.
double ping_pong(Team& team, bool ucx_path, int iterations, uint64_t& sequence) {
  Window& window = *rankflow::transport::TeamState::of(team)->window;
  const int peer = 1 - team.rank();
  const size_t data = team.offset("small");
  const size_t ping_slot = rankflow::transport::TeamState::of(team)->layout.signal_slot(kPing);
  uint64_t payload = 0;
  const auto start = Clock::now();
  const auto* inbox = reinterpret_cast<const volatile uint64_t*>(team.local_ptr(data));
  // The receiver reads the payload each time: it must be the sender's sequence number.
  auto receive = [&] {
    team.wait_signal(kPing, ++sequence, peer);
    if (*inbox != sequence) {
      throw rankflow::Error(rankflow::ErrorCode::kRemoteFailure,
                            "ping-pong payload " + std::to_string(*inbox) + " arrived, expected " +
                                std::to_string(sequence));
    }
  };
  for (int i = 0; i < iterations; ++i) {
    const bool my_turn_first = team.rank() == 0;
    if (!my_turn_first) receive();
    payload = sequence + (my_turn_first ? 1 : 0);
    if (ucx_path) {
      window.put(peer, data, &payload, sizeof(payload));
      window.fence();
      window.atomic_add<uint64_t>(peer, ping_slot, 1);
    } else {
      team.put(peer, data, &payload, sizeof(payload));
      team.signal(peer, kPing);
    }
    if (my_turn_first) receive();
  }
  return seconds_since(start) / (2.0 * iterations);
}

// `sequence` counts the pings this rank has received so far, across calls.
double latency_us(Team& team, bool ucx_path, const Options& options, uint64_t& sequence) {
  ping_pong(team, ucx_path, options.latency_iterations / 10, sequence);  // warm-up
  std::vector<double> batches;
  for (int b = 0; b < options.batches; ++b) {
    batches.push_back(ping_pong(team, ucx_path, options.latency_iterations, sequence));
  }
  team.barrier();
  return median(batches) * 1e6;
}

enum class PutPath { kDirect, kUcx };

// Rank 0 puts `bytes` into rank 1's window `repeat` times per batch; rank 1 waits for the signal
// after each batch. Returns rank 0's median seconds per put (rank 1 returns 0).
double put_time(Team& team, PutPath path, size_t bytes, int repeat, const Options& options,
                const std::vector<uint8_t>& source, uint64_t& batches_done) {
  Window& window = *rankflow::transport::TeamState::of(team)->window;
  const size_t dst = team.offset("big");
  std::vector<double> batches;
  for (int b = -1; b < options.batches; ++b) {  // batch -1 warms up
    if (team.rank() == 0) {
      const auto start = Clock::now();
      for (int r = 0; r < repeat; ++r) {
        if (path == PutPath::kDirect) {
          std::memcpy(window.remote_ptr(1, dst), source.data(), bytes);
        } else {
          window.put(1, dst, source.data(), bytes);
          window.flush(1);
        }
      }
      if (b >= 0) batches.push_back(seconds_since(start) / repeat);
      team.signal(1, kDone);
    } else {
      team.wait_signal(kDone, batches_done + 1, 0);
    }
    ++batches_done;
  }
  if (team.rank() == 1 && std::memcmp(team.local_ptr(dst), source.data(), bytes) != 0) {
    throw rankflow::Error(rankflow::ErrorCode::kRemoteFailure,
                          "put of " + std::to_string(bytes) + " bytes delivered wrong data");
  }
  team.barrier();
  return team.rank() == 0 ? median(batches) : 0.0;
}

double memcpy_time(size_t bytes, int repeat, const Options& options,
                   const std::vector<uint8_t>& source, std::vector<uint8_t>& target) {
  std::vector<double> batches;
  for (int b = -1; b < options.batches; ++b) {
    const auto start = Clock::now();
    for (int r = 0; r < repeat; ++r) {
      std::memcpy(target.data(), source.data(), bytes);
      asm volatile("" ::: "memory");
    }
    if (b >= 0) batches.push_back(seconds_since(start) / repeat);
  }
  return median(batches);
}

void print_bandwidth_row(size_t bytes, double copy_s, double direct_s, double ucx_s, bool mapped) {
  const double copy_gbs = bytes / copy_s / 1e9;
  const double ucx_gbs = bytes / ucx_s / 1e9;
  if (mapped) {
    const double direct_gbs = bytes / direct_s / 1e9;
    std::printf("%10zu %10.2f %9.2f | %10.2f %9.2f %6.0f%% | %10.2f %9.2f %6.0f%%\n", bytes,
                copy_s * 1e6, copy_gbs, direct_s * 1e6, direct_gbs, 100 * direct_gbs / copy_gbs,
                ucx_s * 1e6, ucx_gbs, 100 * ucx_gbs / copy_gbs);
  } else {
    std::printf("%10zu %10.2f %9.2f | %10s %9s %7s | %10.2f %9.2f %6.0f%%\n", bytes, copy_s * 1e6,
                copy_gbs, "-", "-", "-", ucx_s * 1e6, ucx_gbs, 100 * ucx_gbs / copy_gbs);
  }
}

int run(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
      options.batches = 3;
      options.latency_iterations = 1000;
    } else {
      throw rankflow::InvalidArgument("transport_bench: unknown option '" + arg +
                                      "'; the only option is --quick");
    }
  }
  auto context = Context::acquire(&argc, &argv);
  if (context->world_size() != 2) {
    throw rankflow::InvalidArgument("transport_bench needs exactly 2 ranks (mpirun -n 2), got " +
                                    std::to_string(context->world_size()));
  }
  Team team = rankflow::transport::create_team(context, MPI_COMM_WORLD,
                                               {{"small", 64}, {"big", kMaxBytes}}, "bench");
  const bool mapped = team.all_mapped();
  const bool root = team.rank() == 0;
  if (root) {
    std::printf("# rankflow transport_bench: 2 ranks; rank 0 %s, rank 1 on the peer core\n",
                context->binding().c_str());
    std::printf("# direct mapping: %s\n", mapped ? "yes" : "no (UCX_TLS without shared memory)");
  }

  uint64_t pings = 0;
  const double ucx_latency = latency_us(team, true, options, pings);
  const double direct_latency = mapped ? latency_us(team, false, options, pings) : 0.0;
  if (root) {
    std::printf("\n# 8-byte put + signal, one-way latency (median of %d batches)\n",
                options.batches);
    if (mapped) std::printf("direct mapping : %8.3f us\n", direct_latency);
    std::printf("ucp_put + amo  : %8.3f us\n", ucx_latency);
  }

  std::vector<uint8_t> source(kMaxBytes), target(kMaxBytes);
  for (size_t i = 0; i < kMaxBytes; ++i)
    source[i] = static_cast<uint8_t>(i * 31 + 7);
  if (root) {
    std::printf(
        "\n# put bandwidth, rank 0 -> rank 1 (median per put; %% of memcpy at that size)\n");
    std::printf("%10s %10s %9s | %10s %9s %7s | %10s %9s %7s\n", "bytes", "memcpy us", "GB/s",
                "direct us", "GB/s", "%cpy", "ucp_put us", "GB/s", "%cpy");
  }
  uint64_t batches_done = 0;
  const size_t max_bytes = options.quick ? size_t{1} << 20 : kMaxBytes;
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 2) {
    const int repeat = static_cast<int>(std::clamp<size_t>((size_t{32} << 20) / bytes, 1, 256));
    const double copy_s = root ? memcpy_time(bytes, repeat, options, source, target) : 0.0;
    const double direct_s =
        mapped ? put_time(team, PutPath::kDirect, bytes, repeat, options, source, batches_done)
               : 0.0;
    const double ucx_s =
        put_time(team, PutPath::kUcx, bytes, repeat, options, source, batches_done);
    if (root) print_bandwidth_row(bytes, copy_s, direct_s, ucx_s, mapped);
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
