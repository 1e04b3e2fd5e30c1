// The algorithm tables: every algorithm of every collective by name, with what it can do (the
// sizes and member counts it serves, where it is the built-in choice, whether it pushes from and
// into the caller's memory, writes the destination or stages the source itself), the default
// choice, and the environment overrides RANKFLOW_ALLREDUCE, RANKFLOW_ALLGATHER,
// RANKFLOW_REDUCE_SCATTER, RANKFLOW_BROADCAST and RANKFLOW_ALL_TO_ALL ("name", or size ranges
// such as "onephase:0-64k;twophase:64k-inf"). The tables themselves are data, in tables.cpp;
// the parser and the selection are here and in registry.cpp. Pure apart from reading the
// environment; any thread.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"

namespace rankflow::coll {

// A set of messages: sizes in [min_bytes, max_bytes] (both inclusive) on min_members to
// max_members members, and, with needs_inbox, only on a context that has the low-latency inbox.
// Sizes are the bytes of `count` elements: the whole message for allreduce and broadcast, one
// member's block for allgather, reduce_scatter and all_to_all.
struct Limits {
  size_t min_bytes = 0;
  size_t max_bytes = SIZE_MAX;
  int min_members = 1;
  int max_members = INT_MAX;
  bool needs_inbox = false;

  constexpr bool holds(size_t bytes, int members, bool has_inbox) const {
    return bytes >= min_bytes && bytes <= max_bytes && members >= min_members &&
           members <= max_members && (has_inbox || !needs_inbox);
  }
  constexpr bool empty() const { return min_bytes > max_bytes || min_members > max_members; }
  // "blocks of 1-4096 bytes on 2 members", for diagnostics and docs.
  std::string describe() const;
};
inline constexpr Limits kAnyMessage{};
inline constexpr Limits kNoMessage{1, 0};
// Sizes of [min_bytes, max_bytes] on two members: what the sweeps measure (the tables' measured
// ranges and the machine profiles' choices).
constexpr Limits kTwoMembers(size_t min_bytes, size_t max_bytes) {
  return {min_bytes, max_bytes, 2, 2};
}

// Up to three sets of messages, for where a sweep found an algorithm fastest: its sizes need
// not be one range.
struct Ranges {
  Limits sets[3] = {kNoMessage, kNoMessage, kNoMessage};
  constexpr Ranges() = default;
  constexpr Ranges(Limits a, Limits b = kNoMessage, Limits c = kNoMessage)  // NOLINT: implicit
      : sets{a, b, c} {}
  constexpr bool holds(size_t bytes, int members, bool has_inbox) const {
    return sets[0].holds(bytes, members, has_inbox) || sets[1].holds(bytes, members, has_inbox) ||
           sets[2].holds(bytes, members, has_inbox);
  }
  // The non-empty sets' describe(), joined by " or ".
  std::string describe() const;
};

// The memory a collective runs on: symmetric (comm.alloc memory, a domain's buffers: in place)
// or the caller's own (plain: staged, or pushed from and into it). Every member of a call passes
// the same kind, as symmetric memory requires, so a choice by kind stays in step.
enum class Buffers : uint8_t { kSymmetric, kPlain };

// One entry of a table: the algorithm and what it can do, so callers choose by capability.
template <typename Args>
struct Algorithm {
  std::string_view name;
  // Takes the arguments by reference, so that the struct is not copied on the way (a copy of a
  // struct just built costs a store-forwarding stall on every call); the coroutines' adaptors
  // (tables.cpp) copy it once, into the frame.
  CollTask (*run)(CollContext&, const Args&);
  std::string_view summary;
  const char* label;  // "<collective>(<name>)", as diagnostics name it
  Ranges serves;      // the messages it is correct for; never run outside them
  // Where it is the built-in choice when no entry's measured range (below) holds the message:
  // the first entry whose `preferred` holds wins.
  Limits preferred;
  // Messages it runs straight from and into the caller's memory (any memory, nothing staged,
  // window offsets unused): the pushed and streamed paths.
  Ranges pushes;
  // Writes the result to the caller's destination itself (no copy out of the staging window).
  bool writes_dst;
  // Stages the input from the caller's source itself (only what peers read).
  bool stages_src;
  // Messages whose staged source is copied in with non-temporal stores (stage_copy.h): where
  // peers read the staged input, not fetching the lines their caches hold can win. Chosen per
  // collective and size from bench --buffers user --stage-copy ab (docs/performance.md).
  Limits streams_staged = kNoMessage;
  // Where the latest sweep (scripts/sweep-choices.py, recorded in collectives/sweep_choices.txt
  // and held to it by tests/unit/sweep_choices_test.cpp) found it fastest on symmetric and on
  // plain buffers, where that differs from `preferred`: checked for the call's kind of buffers
  // before `preferred`, which decides wherever no entry's measured range holds (other member
  // counts than the sweep's, for one).
  Ranges measured_symmetric = {};
  Ranges measured_plain = {};
  // Open MPI's own collective on the communicator's MPI_Comm, which the library-mode
  // communicator runs itself (api/mpi_collectives.h; `run` is null): where the sweep found
  // every staged path slower on plain buffers (Open MPI copies once, through CMA on one host).
  // Chosen only where the caller allows it (see choose()).
  bool open_mpi = false;
};

// Arguments of the non-allreduce collectives. Offsets are in the team's window; the pointers are
// the caller's own memory: for pushing algorithms both, for writes_dst algorithms dst_ptr (null
// on symmetric memory), for stages_src algorithms src_ptr (null on symmetric memory).
struct ExchangeArgs {  // allgather and all_to_all
  size_t src;
  size_t dst;
  size_t block_bytes;  // one member's block
  size_t elem_size;
  const std::byte* src_ptr = nullptr;
  std::byte* dst_ptr = nullptr;
  bool stream_staging = false;  // stages_src algorithms: stage with non-temporal stores
};
struct ReduceScatterArgs {
  size_t src;
  size_t dst;
  size_t count;  // elements of one block
  const Reducer* reducer;
  const std::byte* src_ptr = nullptr;
  std::byte* dst_ptr = nullptr;
};
struct BroadcastArgs {
  size_t buffer;
  size_t bytes;
  int root;
  std::byte* ptr = nullptr;               // the caller's buffer (pushing) or recv (writes_dst)
  const std::byte* stage_from = nullptr;  // the root's buffer when the algorithm stages it
  bool stream_staging = false;            // stage it with non-temporal stores
};

using AllreduceAlgorithm = Algorithm<AllreduceArgs>;
using AllgatherAlgorithm = Algorithm<ExchangeArgs>;
using AllToAllAlgorithm = Algorithm<ExchangeArgs>;
using ReduceScatterAlgorithm = Algorithm<ReduceScatterArgs>;
using BroadcastAlgorithm = Algorithm<BroadcastArgs>;

// One rule of an override: messages of [min_bytes, max_bytes) bytes use `algorithm`, where it
// serves them.
template <typename Args>
struct SizeRule {
  size_t min_bytes;
  size_t max_bytes;
  const Algorithm<Args>* algorithm;
};

// One choice of a machine profile (machine_profile.h), resolved to its table's entry: the
// messages of `limits` on `buffers` were measured fastest with `algorithm` on that machine. It
// counts as a measured range, before the table's own.
template <typename Args>
struct MeasuredRule {
  Limits limits;
  Buffers buffers;
  const Algorithm<Args>* algorithm;
};

// Parses "name" or "name:lo-hi;name:lo-hi" (sizes in bytes with optional k, m, g suffixes,
// powers of 1024, and "inf") into ranges over `names`. Throws InvalidArgument naming `variable`,
// the bad part and, for an unknown name, the valid names.
struct ParsedRule {
  size_t min_bytes;
  size_t max_bytes;
  size_t index;  // into `names`
};
std::vector<ParsedRule> parse_size_rules(std::string_view spec, std::string_view variable,
                                         std::span<const std::string_view> names);

// A collective's table.
template <typename Args>
class AlgorithmTable {
 public:
  using Entry = Algorithm<Args>;
  using Rules = std::vector<SizeRule<Args>>;
  using Measured = std::span<const MeasuredRule<Args>>;

  constexpr AlgorithmTable(const char* collective, const char* variable,
                           std::span<const Entry> algorithms)
      : collective_(collective), variable_(variable), algorithms_(algorithms) {}

  const char* collective() const { return collective_; }  // "allgather"
  const char* variable() const { return variable_; }      // "RANKFLOW_ALLGATHER"
  std::span<const Entry> algorithms() const { return algorithms_; }
  std::string valid_names() const;  // "pushed, mesh"

  // Throws InvalidArgument listing the valid names.
  const Entry& find(std::string_view name) const;
  // The built-in choice: the first of the machine's measured rules (`machine`, from the profile
  // its members agreed on) that holds the message and whose algorithm serves it, else the first
  // entry whose measured range for `buffers` holds the message, else the first entry whose
  // `preferred` does. Entries that run Open MPI's collective
  // (open_mpi) only with `open_mpi_allowed`: blocking library-mode calls whose arguments MPI
  // takes (api/mpi_collectives.h); the collectives in the DAG runtime never pass it. Where Open
  // MPI measured fastest but may not run (a non-blocking call, a domain's communicator), an
  // entry that pushes the message comes first: one push round is the nearest to its single
  // copy (a non-blocking broadcast of 16 KiB on plain buffers x0.50 of MPI_Ibcast staged, x0.98
  // pushed).
  const Entry& builtin(size_t bytes, int members, bool has_inbox,
                       Buffers buffers = Buffers::kSymmetric, bool open_mpi_allowed = false,
                       Measured machine = {}) const {
    // The machine measured Open MPI fastest where it may not run: straight to the push below.
    bool open_mpi_measured = false;
    for (const MeasuredRule<Args>& rule : machine) {
      if (rule.buffers != buffers || !rule.limits.holds(bytes, members, has_inbox) ||
          !rule.algorithm->serves.holds(bytes, members, has_inbox))
        continue;
      if (open_mpi_allowed || !rule.algorithm->open_mpi) return *rule.algorithm;
      open_mpi_measured = true;
      break;
    }
    const bool machine_said_open_mpi = open_mpi_measured;
    for (const Entry& a : algorithms_) {
      if (machine_said_open_mpi) break;
      const Ranges& measured = buffers == Buffers::kPlain ? a.measured_plain : a.measured_symmetric;
      if (!measured.holds(bytes, members, has_inbox)) continue;
      if (open_mpi_allowed || !a.open_mpi) return a;
      open_mpi_measured = true;
    }
    if (open_mpi_measured) {
      for (const Entry& a : algorithms_) {
        if (!a.open_mpi && a.pushes.holds(bytes, members, has_inbox) &&
            a.serves.holds(bytes, members, has_inbox))
          return a;
      }
    }
    for (const Entry& a : algorithms_) {
      if (a.preferred.holds(bytes, members, has_inbox)) return a;
    }
    return algorithms_.back();  // not reached: every table has an entry preferred for all
  }
  // `spec` in the syntax above; errors name variable().
  Rules parse(std::string_view spec) const;
  // The rules of variable() (none when unset or empty). Throws InvalidArgument for a bad value.
  Rules from_environment() const;
  // The first rule whose range holds `bytes` and whose algorithm serves the message, else the
  // built-in choice. Inline and silent: communicators call it on every collective.
  const Entry& choose(size_t bytes, int members, bool has_inbox, const Rules& rules,
                      Buffers buffers = Buffers::kSymmetric, bool open_mpi_allowed = false,
                      Measured machine = {}) const {
    for (const SizeRule<Args>& rule : rules) {
      if (bytes >= rule.min_bytes && bytes < rule.max_bytes &&
          rule.algorithm->serves.holds(bytes, members, has_inbox) &&
          (open_mpi_allowed || !rule.algorithm->open_mpi))
        return *rule.algorithm;
    }
    return builtin(bytes, members, has_inbox, buffers, open_mpi_allowed, machine);
  }
  // Logs at debug level the rules choose() skipped (their algorithms do not serve the message)
  // and `chosen`: "allgather of 64 bytes on 2 members: pushed".
  void log_choice(size_t bytes, int members, const Rules& rules, const Entry& chosen) const;
  // choose(), logged when RANKFLOW_LOG=debug.
  const Entry& select(size_t bytes, int members, bool has_inbox, const Rules& rules,
                      Buffers buffers = Buffers::kSymmetric, bool open_mpi_allowed = false,
                      Measured machine = {}) const;

 private:
  const char* collective_;
  const char* variable_;
  std::span<const Entry> algorithms_;
};

// The tables (tables.cpp).
extern const AlgorithmTable<AllreduceArgs> kAllreduceTable;
extern const AlgorithmTable<ExchangeArgs> kAllgatherTable;
extern const AlgorithmTable<ReduceScatterArgs> kReduceScatterTable;
extern const AlgorithmTable<BroadcastArgs> kBroadcastTable;
extern const AlgorithmTable<ExchangeArgs> kAllToAllTable;
inline const AlgorithmTable<AllreduceArgs>& allreduce_table() {
  return kAllreduceTable;
}
inline const AlgorithmTable<ExchangeArgs>& allgather_table() {
  return kAllgatherTable;
}
inline const AlgorithmTable<ReduceScatterArgs>& reduce_scatter_table() {
  return kReduceScatterTable;
}
inline const AlgorithmTable<BroadcastArgs>& broadcast_table() {
  return kBroadcastTable;
}
inline const AlgorithmTable<ExchangeArgs>& all_to_all_table() {
  return kAllToAllTable;
}

// Every table's override rules, read once when a communicator is created.
struct Overrides {
  AlgorithmTable<AllreduceArgs>::Rules allreduce;
  AlgorithmTable<ExchangeArgs>::Rules allgather;
  AlgorithmTable<ReduceScatterArgs>::Rules reduce_scatter;
  AlgorithmTable<BroadcastArgs>::Rules broadcast;
  AlgorithmTable<ExchangeArgs>::Rules all_to_all;
};
// Throws InvalidArgument naming the variable with a bad value.
Overrides overrides_from_environment();

// Allreduce also takes an explicit name from the caller: `requested` is an algorithm name or
// "auto"; "auto" takes the override rules, then the built-in table.
const AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes, int members,
                                           const AlgorithmTable<AllreduceArgs>::Rules& overrides,
                                           Buffers buffers = Buffers::kSymmetric,
                                           bool open_mpi_allowed = false);
// Shorthands for allreduce_table().algorithms / .find / .builtin (with an inbox).
std::span<const AllreduceAlgorithm> allreduce_algorithms();
const AllreduceAlgorithm& find_allreduce(std::string_view name);
const AllreduceAlgorithm& default_allreduce(size_t bytes, int members);

}  // namespace rankflow::coll
