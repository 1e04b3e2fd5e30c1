// The machine profiles as data, CPU detection with cpuid, RANKFLOW_MACHINE, and the profiles'
// choices resolved to table entries (see machine_profile.h). Pure; any thread.
#include "collectives/machine_profile.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstring>

#include "common/env.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
// Sizes on two members only (kTwoMembers): the sweeps' (a profile says nothing of other member
// counts).

// AMD EPYC, Zen 4 (family 25, models 0x10-0x1f: Genoa). Swept 2026-12-04 on the 2-core cloud
// machine (model 17), two members, plain buffers, 2 KiB to 64 KiB, each algorithm's time
// relative to Open MPI's in the same run (collectives/sweep_choices.amd-zen4.txt; each sweep's
// times in docs/data/sweep-amd-zen4-2026-12-04-*.txt). The machine runs in two modes (its two
// cores on one core complex or on two, docs/performance.md), and the pushed and staged paths'
// times grow 2-3 times in the slow one. allreduce, reduce_scatter and broadcast: ranked by the mean
// of five sweeps, which weighs that loss against the gain in the fast mode. allgather and
// all_to_all: ranked by the worst of sixteen (eight with `cross_memory`, eight from before it,
// whose `pipelined` ran that copy from 16 KiB blocks), since the issue asks for never slower than
// Open MPI in either mode. Where it differs from the tables (times relative to Open MPI's, the
// range over the sweeps, lower is faster):
constexpr MachineChoice kAmdZen4[] = {
    // allreduce 32 KiB: twophase (handing its part to the peer's recv from 16 KiB on two
    // members, part_hand_off.cpp) first in the sweeps' mean, the tables' onephase within the
    // tolerance; in the evening's launches twophase x1.86-2.09 of Open MPI's busbw in the fast
    // mode, onephase x1.56-2.26; in the slow one, ten launches of each build alternated,
    // x1.84-2.03 against x1.22-1.52 (docs/data/ab-amd-zen4-2026-12-04-evening/allreduce32k.txt).
    {Collective::kAllreduce, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 32 * KiB), "twophase"},
    // allgather, 4 KiB blocks: pipelined 0.26-0.68, the tables' pushed 0.19-0.81; 8 KiB blocks:
    // cross_memory 0.89-0.90 (eight sweeps), pushed 0.41-1.77, pipelined 0.48-1.27, Open MPI's
    // transfer 0.99-1.05.
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(2 * KiB + 1, 4 * KiB), "pipelined"},
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(4 * KiB + 1, 8 * KiB), "cross_memory"},
    // reduce_scatter, 4-32 KiB blocks: mesh 0.19-0.20 / 0.30-0.32 / 0.36-0.41 / 0.45-0.49, the
    // tables' pushed 0.15-0.31 / 0.27-0.55 / 0.37-0.60 / 0.48-0.77.
    {Collective::kReduceScatter, Buffers::kPlain, kTwoMembers(2 * KiB + 1, 32 * KiB), "mesh"},
    // broadcast 32 KiB: direct 0.83-0.96, the tables' Open MPI transfer 1.03-1.10. 16 KiB (direct
    // then read chunks from the root's window: 0.80-2.72, and the Open MPI transfer stayed): since
    // 2026-12-05 direct copies 16 KiB between the processes (broadcast_direct.cpp), 0.93-1.00
    // relative to Open MPI's time in twelve launches of both modes (one 1.14), the Open MPI
    // transfer 1.02-1.10 (bc16.log, bcread.log in docs/data/ab-amd-zen4-2026-12-05-direction/).
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(16 * KiB, 32 * KiB), "direct"},
    // all_to_all, 4 KiB blocks: pipelined 0.24-0.69, the tables' pushed 0.18-0.83; 8 KiB blocks:
    // cross_memory 0.85-0.96 (eight sweeps), the tables' pushed 0.43-1.54, Open MPI's transfer
    // 0.99-1.04.
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(2 * KiB + 1, 4 * KiB), "pipelined"},
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(4 * KiB + 1, 8 * KiB), "cross_memory"},
    // allgather 256 KiB-2 MiB and all_to_all 256 KiB-1 MiB blocks: `probed` (2026-12-05,
    // launches alternated, docs/data/ab-amd-zen4-2026-12-05-stream/). In the fast mode staging
    // these blocks through the window (memcpy) ran x1.27-1.34 of Open MPI's busbw against the
    // kernel copy's x1.02-1.17 (pl1.log, both forced) and x1.25-1.33 against x1.05-1.11 as
    // chosen (choice1.log); at 128 KiB blocks it lost (x0.80-0.84 against x1.08-1.14), at 2 MiB
    // blocks the allgather won (x1.13 against x0.91) and the all_to_all lost (x0.86 against
    // x1.09). In the slow mode `probed` copies between the processes, as `cross_memory` does.
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(256 * KiB, 2 * MiB), "probed"},
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(256 * KiB, 1 * MiB), "probed"},
};

// The cross-memory exchanges' direction, measured 2026-12-05 with each direction forced, launches
// alternated: in the slow mode writing each block into the peer's recv takes about half the time
// of reading it (allgather of 1-4 MiB blocks x1.7-2.1 of Open MPI against x0.97-1.06); in the
// fast mode writes of 4-8 MiB blocks fall to x0.83-1.01 of Open MPI, whose own transfer reads, and
// reads keep x0.97-1.06; at 1-2 MiB blocks both are within x0.97-1.04 of Open MPI there
// (docs/data/ab-amd-zen4-2026-12-05-direction/). The probe's round trip, which includes its own
// waits and clock reads, reads 160-220 ns in the fast mode (a ping-pong: 60-90 ns) and 520-880 ns
// in the slow one (320-360 ns): 350 ns lies between, the profile's fast mode.
constexpr uint32_t kAmdZen4FastRoundTripNs = 350;
constexpr CrossMemoryReads kAmdZen4Reads{4096 * KiB};

// The own block's copy, measured 2026-12-05 on two processes (the exchange's copies alone,
// docs/data/ab-amd-zen4-2026-12-05-stream/): with non-temporal stores an allgather of 8-16 MiB
// blocks (recv 16-32 MiB a member, beside the peer's as much: more than the 32 MiB L3) took
// x0.79-0.89 of the time with memcpy in both modes; at 1-4 MiB blocks the buffers fit and the
// streamed copy lost (x1.0-1.5 the time). glibc streams only from 240 MiB here (its
// x86_non_temporal_threshold, from the cache size the hypervisor reports). The all_to_all's
// threshold was carried over from the allgather's, not measured on its own.
constexpr OwnBlockStreaming kAmdZen4StreamOwnBlock{.allgather_from_recv = 16 * MiB,
                                                   .all_to_all_from_recv = 16 * MiB};

// The `probed` exchanges (chosen above) stage in the fast mode, whose probe reads 160-220 ns
// against the slow mode's 520-880 ns (staging runs x0.32-0.42 of Open MPI there, against the
// kernel copy's x1.65-2.07: pl-slow.log).
constexpr StagedExchanges kAmdZen4Staged{2};

// AMD EPYC, Zen 5 (family 26, models 0x00-0x1f: Turin). Swept 2026-12-05 on the 2-core cloud
// machine (model 2), two members, plain buffers, 1 KiB to 16 MiB, three sweeps, each
// algorithm's time relative to Open MPI's in the same run, ranked by the median
// (collectives/sweep_choices.amd-zen5.txt; the sweeps' times in
// docs/data/sweep-amd-zen5-2026-12-05/). A system call costs about 1.1 us here (a kernel copy of
// 64 bytes between two processes 2 us), so the kernel's copy loses to pushing or staging through
// the window up to large blocks. Where it differs from the tables:
constexpr MachineChoice kAmdZen5[] = {
    // allreduce 64 KiB: onephase 0.50 of Open MPI's time (median), ring within 10 %, the
    // tables' twophase beyond it.
    {Collective::kAllreduce, Buffers::kPlain, kTwoMembers(32 * KiB + 1, 64 * KiB), "onephase"},
    // allgather, 16 KiB blocks: pushed 0.29, the tables' cross_memory 1.04; 32-64 KiB blocks:
    // pipelined 0.41-0.44 (memcpy staging), cross_memory 0.58-0.69.
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 16 * KiB), "pushed"},
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 64 * KiB), "pipelined"},
    // reduce_scatter, 32 KiB blocks: mesh, the tables' pushed beyond 10 %.
    {Collective::kReduceScatter, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 32 * KiB), "mesh"},
    // broadcast 16 KiB: pushed 0.42, the tables' Open MPI transfer 1.07; 32-512 KiB: staged
    // (chunks through the root's window, no kernel copy) 0.49-0.66, pushed 0.78 at 32 KiB, the
    // tables' direct (the kernel's copy) 0.67-1.61 (a second sweep of the broadcast alone).
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 16 * KiB), "pushed"},
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 512 * KiB), "staged"},
    // all_to_all, 16 KiB blocks: pushed 0.32, the tables' cross_memory 1.11; 32-128 KiB blocks:
    // pipelined 0.39-0.58, cross_memory 0.69-1.03; 512 KiB blocks pipelined 0.64, cross_memory
    // 0.83 (at 256 KiB and from 1 MiB cross_memory is first or within 10 %).
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 16 * KiB), "pushed"},
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 128 * KiB), "pipelined"},
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(256 * KiB + 1, 512 * KiB), "pipelined"},
    // Symmetric buffers (comm.alloc and registered arrays), swept 2026-12-06, 256 B to 16 MiB,
    // three sweeps (docs/data/sweep-amd-zen5-2026-12-06-symmetric/; ranked to 8 KiB: above, the
    // algorithms' sweeps overlapped by 15-40 % and the tables' choices stay). The tables' reading
    // in place from 2 KiB (measured on earlier machines) costs two rounds of signals, about 1 us
    // here, where one push round costs 0.5-0.9 us: allreduce 2-4 KiB onephase (pushed) 0.50 /
    // 0.31 of Open MPI's time against twophase's 0.78 / 0.36; allgather, reduce_scatter and
    // all_to_all 2-8 KiB blocks pushed 0.12-0.52 against the mesh's 0.17-0.86; broadcast 2-8 KiB
    // pushed 0.16-0.44 against direct's 0.26-0.88, and 512 B streamed 0.21 against pushed 0.36.
    {Collective::kAllreduce, Buffers::kSymmetric, kTwoMembers(KiB + 1, 4 * KiB), "onephase"},
    {Collective::kAllgather, Buffers::kSymmetric, kTwoMembers(KiB + 1, 8 * KiB), "pushed"},
    {Collective::kReduceScatter, Buffers::kSymmetric, kTwoMembers(KiB + 1, 8 * KiB), "pushed"},
    {Collective::kBroadcast, Buffers::kSymmetric, kTwoMembers(257, 512), "streamed"},
    {Collective::kBroadcast, Buffers::kSymmetric, kTwoMembers(KiB + 1, 8 * KiB), "pushed"},
    {Collective::kAllToAll, Buffers::kSymmetric, kTwoMembers(KiB + 1, 8 * KiB), "pushed"},
};

// Plain twophase allreduce in 1 MiB segments at every size where they come out equal (the
// tables: at most 4 up to 4 MiB, whole above; allreduce_twophase.cpp). Whole, 8 MiB ran
// x1.35-1.37 of Open MPI's busbw in the three full sweeps of 2026-12-05 16:36-16:38 (4 MiB,
// segmented, x1.82-1.90): send, recv and the staging outgrow the 32 MiB L3 of the two
// processes. Four alternated launches (both modes), 2-16 MiB: 8 MiB x2.21 (2.13-2.49) in 1 MiB
// segments against x1.58 (1.48-1.75) whole, 16 MiB x2.02 against x1.83, 512 KiB segments no
// better (docs/data/ab-amd-zen5-2026-12-05-fetch-ahead/twophase-segments.log).
constexpr TwophaseSegments kAmdZen5Twophase{SIZE_MAX, SIZE_MAX};

// Intel Xeon, Emerald Rapids (family 6 model 207: 2 MiB L2 a core, a 260 MiB L3). Swept
// 2026-12-06 on the 2-core cloud machine, two members, plain buffers: allreduce, allgather and
// all_to_all from 1 MiB, three full sweeps, each algorithm's time relative to Open MPI's in the
// same run, ranked by the median (collectives/sweep_choices.intel-emr.txt; the times in
// docs/data/sweep-intel-emr-2026-12-06/). The tables' choices were the fastest, or within 10 %
// of it, at every size (twophase, 0.48-0.72 of Open MPI's time; cross_memory, 0.51-1.01, with
// Open MPI's own transfer within 10 % from 2 MiB blocks; staging through the window 1.0-1.3,
// reading the peer's blocks no faster), so at those sizes the profile changes no choice, only
// how two of them copy (the broadcast's choice below comes from a sweep of its own). Five
// launches of each, alternated with the tables alone (docs/data/ab-intel-emr-2026-12-06/
// profile.log):
// - plain twophase in 1 MiB segments at every size where they come out equal (as the Zen 5's;
//   the tables send more than 4 MiB whole): 16 MiB x1.44 of Open MPI's busbw against x1.38,
//   32-64 MiB x2.26-2.31 against x1.94-1.95, 4-8 MiB level;
// - the exchanges' own block with non-temporal stores from a 16 MiB recv (the bench starts those
//   calls from settled caches: docs/performance.md): allgather 16-64 MiB x1.12-1.25 against
//   x1.05-1.11, all_to_all 32-64 MiB x1.10-1.12 against x1.02-1.06, 16 MiB level.
constexpr MachineChoice kIntelEmr[] = {
    // broadcast 16 KiB: pushed 0.64 of Open MPI's time, the tables' Open MPI transfer 1.01
    // (three full-batch sweeps of broadcast alone, 4-64 KiB,
    // docs/data/sweep-intel-emr-2026-12-06/broadcast-full.raw; 0.56 against 1.03 in three
    // --quick sweeps); again 0.83 against 1.01 at 10:32 (below).
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 16 * KiB), "pushed"},
    // broadcast 32 KiB: direct (the peer reads half of the root's buffer while the root writes
    // the other half, broadcast_cross_memory.cpp) once each call stopped asking the kernel for
    // its process id (process_memory.cpp): 0.84 of Open MPI's time against the push's 1.08 and
    // the Open MPI transfer's 1.01 (three full-batch sweeps, 10:32,
    // docs/data/ab-intel-emr-2026-12-06-reads/broadcast-full.raw); in alternated launches x1.22
    // -1.29 of Open MPI's busbw against the push's x0.92-1.06 (broadcast-direct.log there). The
    // push lost at 32 KiB because its 512 lines cross the cores twice.
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(16 * KiB + 1, 32 * KiB), "direct"},
};
// From 2 MiB each member reads its part of the peer's input with one kernel copy instead of
// having the peer stage it (allreduce_twophase_read.cpp). Four alternated launches at 64 KiB-16
// MiB and three at 16-64 MiB, reading against staging (RANKFLOW_CROSS_MEMORY_DIRECTION=read /
// write, docs/data/ab-intel-emr-2026-12-06-reads/twophase-reads.log): 2 MiB x1.75 of Open MPI's
// busbw against x1.49, 4 MiB x1.69 against x1.35, 8 MiB x1.58 against x1.45, 16 MiB x1.60-1.80
// against x1.54-1.58, 32-64 MiB x2.47-2.63 against x2.26-2.32; 512 KiB-1 MiB level, 128-256 KiB
// slower (x1.73-1.77 against x1.85).
// From 16 MiB, out of place, the parts are streamed instead (allreduce_twophase.cpp): the recv of
// such a call is not in cache, and the reading protocol's kernel copies into it ran at 4.5-7
// GB/s against 17-21 for non-temporal stores (docs/data/ab-intel-emr-2026-12-06-streamed/
// cold-destination.cpp). Three alternated launches (streamed.log there): 16 MiB x1.94 of Open
// MPI's busbw against x1.57, 32 MiB x2.91 against x2.44, 64 MiB x2.88 against x2.53; in place
// (which still hands off) level. The floor without a library, from settled caches
// (allreduce-cold.cpp), 16 MiB: 3.2-3.7 ms against the reading protocol's 4.2-4.7; not settled,
// 4 MiB: 0.69 ms against 0.51, so smaller calls keep reading.
constexpr TwophaseSegments kIntelEmrTwophase{.segmented_up_to = SIZE_MAX,
                                             .max_segments = SIZE_MAX,
                                             .reads_from = 2 * MiB,
                                             .streams_from = 16 * MiB};
// The all_to_all's own block streams from a 2 MiB recv: it is copied from send on its own, as
// in the floor of docs/data/floor-intel-emr-2026-12-06-all-to-all/. The allgather's comes from
// the cache, chunk by chunk beside its kernel writes, and streaming it below 16 MiB lost (4 MiB
// x1.17 against x1.35). Alternated launches, five logs, 2026-12-06 20:55-21:02
// (docs/data/ab-intel-emr-2026-12-06-night/, pool.py), median ratio to Open MPI's busbw over
// 24-29 launches each: 2 MiB x1.28 against x1.15, 4 MiB x1.20 against x1.09, 8 MiB x1.11
// against x1.04; two of the five logs read level.
constexpr OwnBlockStreaming kIntelEmrStreamOwnBlock{.allgather_from_recv = 16 * MiB,
                                                    .all_to_all_from_recv = 2 * MiB};

constexpr MachineProfile kProfiles[] = {
    {.name = "amd-zen4",
     .measured_on = "AMD EPYC (family 25 model 17), 2 cores, 2026-12-04",
     .cpus = {"AuthenticAMD", 25, 0x10, 0x1f},
     .choices = kAmdZen4,
     .fast_round_trip_ns = kAmdZen4FastRoundTripNs,
     .reads = kAmdZen4Reads,
     .stream_own_block = kAmdZen4StreamOwnBlock,
     .staged = kAmdZen4Staged},
    {.name = "amd-zen5",
     .measured_on = "AMD EPYC (family 26 model 2), 2 cores, 2026-12-05",
     .cpus = {"AuthenticAMD", 26, 0x00, 0x1f},
     .choices = kAmdZen5,
     .twophase = kAmdZen5Twophase},
    {.name = "intel-emr",
     .measured_on = "Intel Xeon (family 6 model 207), 2 cores, 2026-12-06",
     .cpus = {"GenuineIntel", 6, 207, 207},
     .choices = kIntelEmr,
     .stream_own_block = kIntelEmrStreamOwnBlock,
     .twophase = kIntelEmrTwophase},
};

template <typename Args>
void resolve(const AlgorithmTable<Args>& table, const MachineChoice& choice,
             std::vector<MeasuredRule<Args>>& rules) {
  rules.push_back({choice.limits, choice.buffers, &table.find(choice.algorithm)});
}

}  // namespace

CpuId this_cpu() {
  CpuId cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return cpu;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  cpu.vendor = vendor;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return cpu;
  const unsigned base_family = (eax >> 8) & 0xf;
  const unsigned base_model = (eax >> 4) & 0xf;
  cpu.family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
  cpu.model = base_family == 0x6 || base_family == 0xf ? (((eax >> 16) & 0xf) << 4) + base_model
                                                       : base_model;
#endif
  return cpu;
}

std::string describe(const CpuId& cpu) {
  if (cpu.vendor.empty()) return "a CPU without cpuid";
  return cpu.vendor + " family " + std::to_string(cpu.family) + " model " +
         std::to_string(cpu.model);
}

TwophaseSegments twophase_segments(const MachineProfile* agreed) {
  return agreed != nullptr ? agreed->twophase : TwophaseSegments{};
}

std::span<const MachineProfile> machine_profiles() {
  return kProfiles;
}

const MachineProfile* profile_for(const CpuId& cpu) {
  for (const MachineProfile& p : kProfiles) {
    if (cpu.vendor == p.cpus.vendor && cpu.family == p.cpus.family &&
        cpu.model >= p.cpus.first_model && cpu.model <= p.cpus.last_model)
      return &p;
  }
  return nullptr;
}

const MachineProfile* find_profile(std::string_view name, std::string_view variable) {
  if (name == "generic") return nullptr;
  std::string valid = "generic";
  for (const MachineProfile& p : kProfiles) {
    if (p.name == name) return &p;
    valid += ", " + std::string(p.name);
  }
  throw InvalidArgument(std::string(variable) + "='" + std::string(name) +
                        "' is not a machine profile; valid: auto, " + valid);
}

const MachineProfile* profile_from_environment() {
  const auto value = env::get("RANKFLOW_MACHINE");
  if (!value || env::trim(*value).empty() || env::trim(*value) == "auto")
    return profile_for(this_cpu());
  return find_profile(env::trim(*value), "RANKFLOW_MACHINE");
}

namespace {
// This process's profile, read from RANKFLOW_MACHINE (or cpuid) once.
const MachineProfile* local_profile() {
  static const MachineProfile* const profile = profile_from_environment();
  return profile;
}
}  // namespace

const CrossMemoryReads& local_cross_memory_reads() {
  static const CrossMemoryReads never{};
  return local_profile() == nullptr ? never : local_profile()->reads;
}

size_t local_stream_own_block_from_recv(bool all_to_all) {
  if (local_profile() == nullptr) return SIZE_MAX;
  const OwnBlockStreaming& from = local_profile()->stream_own_block;
  return all_to_all ? from.all_to_all_from_recv : from.allgather_from_recv;
}

const StagedExchanges& local_staged_exchanges() {
  static const StagedExchanges never{};
  return local_profile() == nullptr ? never : local_profile()->staged;
}

uint32_t local_fast_round_trip_ns() {
  return local_profile() == nullptr ? 0 : local_profile()->fast_round_trip_ns;
}

size_t smallest_cross_memory_read_block() {
  size_t smallest = SIZE_MAX;
  for (const MachineProfile& profile : kProfiles)
    smallest = std::min(smallest, profile.reads.min_block);
  return smallest;
}

std::string_view profile_name(const MachineProfile* profile) {
  return profile == nullptr ? std::string_view("generic") : profile->name;
}

MachineRules machine_rules(const MachineProfile* profile) {
  MachineRules rules;
  rules.profile = profile;
  if (profile == nullptr) return rules;
  for (const MachineChoice& c : profile->choices) {
    switch (c.collective) {
      case Collective::kAllreduce: resolve(allreduce_table(), c, rules.allreduce); break;
      case Collective::kAllgather: resolve(allgather_table(), c, rules.allgather); break;
      case Collective::kReduceScatter:
        resolve(reduce_scatter_table(), c, rules.reduce_scatter);
        break;
      case Collective::kBroadcast: resolve(broadcast_table(), c, rules.broadcast); break;
      case Collective::kAllToAll: resolve(all_to_all_table(), c, rules.all_to_all); break;
    }
  }
  return rules;
}

}  // namespace rankflow::coll
