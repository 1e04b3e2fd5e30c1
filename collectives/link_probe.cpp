// LinkProbe (see link_probe.h). Threads: the thread that drives the collective.
#include "collectives/link_probe.h"

#include <algorithm>

namespace rankflow::coll {

const SignalKind kProbe("link.probe");

void LinkProbe::record(const Arrivals& arrivals, int members) {
  auto lap = arrivals[1] - arrivals[0];  // once around the ring: `members` hops
  for (size_t round = 2; round < arrivals.size(); ++round)
    lap = std::min(lap, arrivals[round] - arrivals[round - 1]);
  round_trip_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(lap * 2 / std::max(members, 1));
}

}  // namespace rankflow::coll
