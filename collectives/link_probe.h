// LinkProbe: how long a signal takes to reach a member's peer and come back, measured now and
// then inside the calls of the algorithms that need it, for choices that depend on how close the
// members' cores are at the moment. On a virtual machine the hypervisor may move the cores: the
// 2-core cloud machine of docs/performance.md switches within minutes between a round trip of
// 60-90 ns (its two cores sharing a cache) and one of 320-360 ns, and which side of a
// cross-memory exchange should make the kernel's copy switches with it.
//
// A probe is a token sent around the members' ring, from member 0, `kRounds` times; each member
// stamps the token's arrivals, and the shortest time between two of them (a lap of P hops), times
// two over P, is the round trip. Each member keeps its own figure (they differ by the clocks'
// reading only), so a choice taken from it alone must not need the members to agree (the
// exchange's direction: a pair reads only where both members offered to). A choice that does
// (which algorithm runs) takes the Verdict instead: member 0's decision from its own figure,
// which it writes into its window and the token carries around once more, so that every member
// holds the same one (exchange_choice.cpp). The probe runs in the first call and then every
// `kEvery`-th call that asks due(), which the members count alike because every member runs the
// same sequence of collectives. Its signal kind is kProbe. Threads: the thread that drives the
// collective (one CollContext, one thread at a time).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "collectives/signal_kind.h"

namespace rankflow::coll {

extern const SignalKind kProbe;

class LinkProbe {
 public:
  static constexpr int kRounds = 8;
  static constexpr uint64_t kEvery = 64;
  using Clock = std::chrono::steady_clock;
  using Arrivals = std::array<Clock::time_point, kRounds>;

  // Counts one call that could probe; true where this call must (every member's answer is the
  // same for the same call).
  bool due() { return calls_++ % kEvery == 0; }
  // The token's arrivals at this member in a team of `members`.
  void record(const Arrivals& arrivals, int members);
  // The last probe's round trip between two members (zero before the first).
  std::chrono::nanoseconds round_trip() const { return round_trip_; }
  // Whether a probe has run and read a round trip under `below_ns` (a profile's threshold
  // between the machine's modes).
  bool round_trip_under(uint32_t below_ns) const {
    return round_trip_.count() > 0 && round_trip_ < std::chrono::nanoseconds(below_ns);
  }

  // Member 0's decision at the last probe, the same on every member: whether the `probed`
  // exchanges stage their blocks through the window (no before the first probe).
  struct Verdict {
    uint64_t stages = 0;  // 1: stage
  };
  void agree(const Verdict& verdict) { verdict_ = verdict; }
  const Verdict& verdict() const { return verdict_; }

  // For tests: every probe of this process records `round_trip` instead of what it measured
  // (zero: what it measured again), so that a test can put member 0 in either mode.
  static void force_round_trip(std::chrono::nanoseconds round_trip);

 private:
  uint64_t calls_ = 0;
  std::chrono::nanoseconds round_trip_{0};
  Verdict verdict_{};
};

}  // namespace rankflow::coll
