// Machine profiles: the algorithm choices one kind of CPU needs where its own sweep disagrees
// with the tables' measured ranges (tables.cpp, which hold the sweeps of other machines). Between
// 8 and 32 KiB the crossovers of the pushed, cross-memory and Open MPI paths depend on how the
// machine moves cache lines between cores: a pushed broadcast of 16 KiB, say, beats Open MPI's
// transfer on an AMD EPYC and lost to it on the Intel Xeon of 2026-12-03 (docs/performance.md).
//
// A profile names the CPUs it was measured on (cpuid's vendor, family and models), and its
// choices, as data; collectives/sweep_choices.<name>.txt holds its sweep, which
// tests/unit/sweep_choices_test.cpp holds the tables with the profile to. A communicator takes
// the profile its members agree on when it is made: each detects its own CPU
// (RANKFLOW_MACHINE=auto, the default) or takes the one RANKFLOW_MACHINE names ("generic": none),
// and where they differ, all take none (every member must choose the same algorithm).
// Pure data, cpuid and the environment; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "collectives/collective.h"
#include "collectives/registry.h"

namespace rankflow::coll {

enum class Collective : uint8_t { kAllreduce, kAllgather, kReduceScatter, kBroadcast, kAllToAll };

// One choice: the messages of `limits` (sizes and member counts, as in the tables: one member's
// block for the exchanges and reduce_scatter) of `collective` on `buffers` take `algorithm`, a
// name in that collective's table.
struct MachineChoice {
  Collective collective;
  Buffers buffers;
  Limits limits;
  std::string_view algorithm;
};

// The CPUs a profile was measured on: cpuid's vendor string and display family, and a range of
// display models (inclusive).
struct CpuModels {
  std::string_view vendor;  // "AuthenticAMD", "GenuineIntel"
  unsigned family;
  unsigned first_model;
  unsigned last_model;
};

// Where a cross-memory allgather or all_to_all reads its peers' blocks rather than having each
// peer write them (RANKFLOW_CROSS_MEMORY_DIRECTION=auto; exchange_cross_memory.cpp): blocks of
// `min_block` bytes and more, in the machine's fast mode (MachineProfile::fast_round_trip_ns).
// The default never reads.
struct CrossMemoryReads {
  size_t min_block = SIZE_MAX;
};

// When the `probed` allgather and all_to_all (which the profile's choices name) stage their blocks
// through the window instead of the kernel's copy (collectives/exchange_choice.cpp): on `members`
// members, in the machine's fast mode as member 0's probe reads it. Member 0 decides for every
// member, so the members always agree. A profile without a fast mode never stages.
struct StagedExchanges {
  int members = 2;
};

// From which recv size (members x block, bytes) a cross-memory exchange copies a member's own
// block with non-temporal stores, per collective (MachineProfile::stream_own_block). Where an
// allgather member writes its block into the peers' recv itself, in chunks over 256 KiB, it
// copies each chunk into its own block from the cache straight after (exchange_cross_memory.cpp);
// otherwise, and always for the all_to_all, the own block is copied from the input on its own.
struct OwnBlockStreaming {
  size_t allgather_from_recv = SIZE_MAX;
  size_t all_to_all_from_recv = SIZE_MAX;
};

struct MachineProfile {
  std::string_view name;         // RANKFLOW_MACHINE's value and the sweep file's suffix
  std::string_view measured_on;  // the machine its sweep ran on, for logs and docs
  CpuModels cpus;
  std::span<const MachineChoice> choices;
  // The machine's fast mode, in which the reads and the staging below apply: the members' round
  // trip (collectives/link_probe.h) under this many nanoseconds. 0: no fast mode (the default).
  uint32_t fast_round_trip_ns = 0;
  CrossMemoryReads reads{};
  // A cross-memory exchange copies a member's own block into its recv with non-temporal stores
  // where recv (members x block) reaches the collective's threshold here: ordinary stores would
  // first fetch each line of recv. The default never streams.
  OwnBlockStreaming stream_own_block{};
  StagedExchanges staged{};
  // How twophase splits an allreduce on plain buffers (collective.h); the default is the tables'.
  TwophaseSegments twophase{};
};
// The split of the profile the members agreed on (the tables' for none).
TwophaseSegments twophase_segments(const MachineProfile* agreed);

// What cpuid says of this CPU (an empty vendor off x86).
struct CpuId {
  std::string vendor;
  unsigned family = 0;
  unsigned model = 0;
};
CpuId this_cpu();
// "AuthenticAMD family 25 model 17".
std::string describe(const CpuId& cpu);

// Every profile (machine_profile.cpp).
std::span<const MachineProfile> machine_profiles();
// The profile measured on `cpu`'s kind, or null (the tables alone: "generic").
const MachineProfile* profile_for(const CpuId& cpu);
// The profile named `name` ("generic": null). InvalidArgument naming `variable` and the valid
// names for any other.
const MachineProfile* find_profile(std::string_view name, std::string_view variable);
// RANKFLOW_MACHINE: unset, empty or "auto" -> profile_for(this_cpu()); else find_profile.
const MachineProfile* profile_from_environment();
// This process's profile's CrossMemoryReads (RANKFLOW_MACHINE or this CPU's; never reads for
// none). Each member chooses the direction of the blocks it receives by itself, so this needs no
// agreement.
const CrossMemoryReads& local_cross_memory_reads();
// This process's profile's stream_own_block threshold for the allgather or (all_to_all) the
// all_to_all (SIZE_MAX for none). A member's own copy concerns no peer, so members need not
// agree on it.
size_t local_stream_own_block_from_recv(bool all_to_all);
// This process's profile's StagedExchanges (never stages for none).
const StagedExchanges& local_staged_exchanges();
// This process's profile's fast_round_trip_ns (0, no fast mode, for none).
uint32_t local_fast_round_trip_ns();
// The smallest CrossMemoryReads::min_block of all profiles (SIZE_MAX where none reads): the
// same in every process of one build, so members may decide alike from it whatever profile each
// took.
size_t smallest_cross_memory_read_block();
// The profile's name, "generic" for null.
std::string_view profile_name(const MachineProfile* profile);

// A profile's choices resolved to each table's entries (an empty rule list for null). Throws
// InvalidArgument for a choice whose algorithm its table does not have (a unit test checks every
// profile resolves).
struct MachineRules {
  const MachineProfile* profile = nullptr;
  std::vector<MeasuredRule<AllreduceArgs>> allreduce;
  std::vector<MeasuredRule<ExchangeArgs>> allgather;
  std::vector<MeasuredRule<ReduceScatterArgs>> reduce_scatter;
  std::vector<MeasuredRule<BroadcastArgs>> broadcast;
  std::vector<MeasuredRule<ExchangeArgs>> all_to_all;
};
MachineRules machine_rules(const MachineProfile* profile);

// `table`'s rules in `rules`, a profile's (MachineRules) or the environment's overrides
// (Overrides), which both hold one field per table of registry.h.
template <typename Bundle, typename Args>
requires std::is_same_v<Bundle, MachineRules> || std::is_same_v<Bundle, Overrides>
const auto& rules_for(const Bundle& rules, const AlgorithmTable<Args>& table) {
  if constexpr (std::is_same_v<Args, AllreduceArgs>) {
    return rules.allreduce;
  } else if constexpr (std::is_same_v<Args, ReduceScatterArgs>) {
    return rules.reduce_scatter;
  } else if constexpr (std::is_same_v<Args, BroadcastArgs>) {
    return rules.broadcast;
  } else {
    return &table == &all_to_all_table() ? rules.all_to_all : rules.allgather;
  }
}

}  // namespace rankflow::coll
