// The `cross_memory` and `probed` allgather and all_to_all: the probe of the members' round trip,
// and the choice it leads `probed` to between the cross-memory exchange
// (exchange_cross_memory.cpp: one kernel copy a block) and staging the blocks through the window
// (the pipelined exchanges).
//
// On the AMD machine of docs/performance.md the better of the two follows the machine's mode:
// with the two cores close (fast mode) staging 256 KiB-2 MiB blocks beats the kernel's copy, with
// them far apart it runs at a third of it. Both are protocols every member must run alike, so the
// choice cannot be each member's own: member 0 makes it from its probe and its profile
// (MachineProfile::staged), writes it into its window, and sends the probe's token around the
// members once more; each member reads it as the token passes and keeps it (LinkProbe::Verdict)
// for every call until the next probe. The profile's choices say where `probed` runs. The probe
// runs in blocking calls where peers are mapped and a choice could follow it (`probed`, or blocks
// any profile reads, for the cross-memory exchange's direction: the same answer on every member)
// on the calls LinkProbe::due() names: the first and every kEvery-th. Runs on the thread that
// drives the collective.
#include <cstring>

#include "collectives/collective.h"
#include "collectives/exchange_cross_memory.h"
#include "collectives/link_probe.h"
#include "collectives/machine_profile.h"

namespace rankflow::coll {
namespace {

using StagedExchange = CollTask (*)(CollContext&, size_t, size_t, const std::byte*, std::byte*,
                                    bool);

// Whether this call probes: a blocking call (a non-blocking one's laps would be paced by the
// caller's tests), peers mapped, `probed` or blocks any profile reads, on the calls due() names.
// Every member answers alike (the same build, entry, block, calls and eager()).
bool probes_this_call(CollContext& c, size_t block, bool blocking, bool follows_verdict) {
  return blocking && c.size() > 1 && c.eager() &&
         (follows_verdict || block >= smallest_cross_memory_read_block()) && c.link_probe().due();
}

// Member 0's decision from its probe's figure and its profile.
LinkProbe::Verdict decide(CollContext& c) {
  const bool fast = c.link_probe().round_trip_under(local_fast_round_trip_ns());
  return {c.size() == local_staged_exchanges().members && fast ? 1u : 0u};
}

// The token around the members' ring LinkProbe::kRounds times, then once more carrying member 0's
// verdict, which it leaves at `word` of its window (nothing else uses it before the token is
// back: every member has read it by then).
CollTask probe_and_agree(CollContext& c, size_t word) {
  const int me = c.rank();
  LinkProbe::Arrivals arrivals;
  if (me == 0) c.notify(c.peer(1), kProbe);
  for (int round = 0; round < LinkProbe::kRounds; ++round) {
    co_await c.await(c.peer(-1), kProbe);
    arrivals[static_cast<size_t>(round)] = LinkProbe::Clock::now();
    if (me != 0 || round + 1 < LinkProbe::kRounds) c.notify(c.peer(1), kProbe);
  }
  c.link_probe().record(arrivals, c.size());
  if (me == 0) {
    const LinkProbe::Verdict verdict = decide(c);
    std::memcpy(c.local(word), &verdict, sizeof verdict);
    c.link_probe().agree(verdict);
    c.notify(c.peer(1), kProbe);
    co_await c.await(c.peer(-1), kProbe);
  } else {
    co_await c.await(c.peer(-1), kProbe);
    c.link_probe().agree(c.read_record<LinkProbe::Verdict>(0, word));
    c.notify(c.peer(1), kProbe);
  }
}

// Probes where due, then runs the exchange the verdict names: staged where the entry follows it,
// the call has a source to stage (a blocking call: `send` the caller's) and the verdict stages
// its blocks, else the cross-memory exchange through `region`. `staged` null: never staged.
CollTask choose_and_exchange(CollContext& c, size_t region, size_t block, const std::byte* send,
                             std::byte* out, bool per_peer, StagedExchange staged,
                             bool stream_staging, bool blocking) {
  if (probes_this_call(c, block, blocking, staged != nullptr)) {
    CollTask probe = probe_and_agree(c, region);
    while (!probe.advance())
      co_await probe.waiting();
  }
  CollTask exchange = staged != nullptr && blocking && c.link_probe().verdict().stages != 0
                          ? staged(c, region, block, send, out, stream_staging)
                          : cross_memory_exchange(c, region, block, send, out, per_peer);
  while (!exchange.advance())
    co_await exchange.waiting();
}

// The exchange, from the window region all members use alike and nothing else fills: src,
// unless the input was staged whole there (a non-blocking call; send null), then dst. (A blocking
// call's dst may differ between members: "in" where send is recv, else "out".)
CollTask exchange_plain(CollContext& c, size_t src, size_t dst, size_t block, const std::byte* send,
                        std::byte* out, bool per_peer, StagedExchange staged, bool stream_staging) {
  if (send == nullptr) {
    return choose_and_exchange(c, dst, block, c.local(src), out, per_peer, staged, stream_staging,
                               false);
  }
  return choose_and_exchange(c, src, block, send, out, per_peer, staged, stream_staging, true);
}

}  // namespace

// Where recv is not the caller's memory, or a block is smaller than the exchange's header, the
// pipelined twins run instead.
CollTask allgather_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                size_t elem_size, const std::byte* send, std::byte* out,
                                bool stream_staging, bool follow_verdict) {
  if (block == 0) return CollTask::finished();
  if (out == nullptr || block < cross_memory_header_bytes(c.size()))
    return allgather_pipelined(c, src, dst, block, elem_size, send, out, stream_staging);
  return exchange_plain(c, src, dst, block, send, out, false,
                        follow_verdict ? &allgather_pipelined_staged : nullptr, stream_staging);
}

CollTask all_to_all_cross_memory(CollContext& c, size_t src, size_t dst, size_t block,
                                 const std::byte* send, std::byte* out, bool stream_staging,
                                 bool follow_verdict) {
  if (block == 0) return CollTask::finished();
  if (out == nullptr || block < cross_memory_header_bytes(c.size()))
    return all_to_all_pipelined(c, src, dst, block, send, out, stream_staging);
  return exchange_plain(c, src, dst, block, send, out, true,
                        follow_verdict ? &all_to_all_pipelined_staged : nullptr, stream_staging);
}

}  // namespace rankflow::coll
