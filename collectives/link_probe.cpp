// LinkProbe (see link_probe.h). Threads: the thread that drives the collective.
#include "collectives/link_probe.h"

#include <algorithm>
#include <atomic>

namespace rankflow::coll {

const SignalKind kProbe("link.probe");

namespace {
std::atomic<int64_t> g_forced_round_trip_ns{0};
}

void LinkProbe::force_round_trip(std::chrono::nanoseconds round_trip) {
  g_forced_round_trip_ns.store(round_trip.count(), std::memory_order_relaxed);
}

void LinkProbe::record(const Arrivals& arrivals, int members) {
  auto lap = arrivals[1] - arrivals[0];  // once around the ring: `members` hops
  for (size_t round = 2; round < arrivals.size(); ++round)
    lap = std::min(lap, arrivals[round] - arrivals[round - 1]);
  round_trip_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(lap * 2 / std::max(members, 1));
  if (const int64_t forced = g_forced_round_trip_ns.load(std::memory_order_relaxed); forced > 0)
    round_trip_ = std::chrono::nanoseconds(forced);
}

}  // namespace rankflow::coll
