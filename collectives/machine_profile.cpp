// The machine profiles as data, CPU detection with cpuid, RANKFLOW_MACHINE, and the profiles'
// choices resolved to table entries (see machine_profile.h).
#include "collectives/machine_profile.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>

#include "common/env.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

constexpr size_t KiB = 1024;
// Sizes on two members: the sweeps' (a profile says nothing of other member counts).
constexpr Limits kTwoMembers(size_t min_bytes, size_t max_bytes) {
  return {min_bytes, max_bytes, 2, 2};
}

// AMD EPYC, Zen 4 (family 25, models 0x10-0x1f: Genoa). Swept 2026-12-04 on the 2-core cloud
// machine (model 17), two members, plain buffers, 2 KiB to 64 KiB, median of five full sweeps,
// each algorithm's time relative to Open MPI's in the same run
// (collectives/sweep_choices.amd-zen4.txt). Where it differs from the tables (lower is faster):
constexpr MachineChoice kAmdZen4[] = {
    // allgather, 8 KiB blocks: pipelined 0.52, mesh 0.54, the tables' pushed 0.65.
    {Collective::kAllgather, Buffers::kPlain, kTwoMembers(4 * KiB + 1, 8 * KiB), "pipelined"},
    // reduce_scatter, 8-32 KiB blocks: mesh 0.31 / 0.40 / 0.47, the tables' pushed
    // 0.41 / 0.51 / 0.50.
    {Collective::kReduceScatter, Buffers::kPlain, kTwoMembers(4 * KiB + 1, 32 * KiB), "mesh"},
    // broadcast 16 / 32 KiB: direct 0.90 / 0.91, the tables' Open MPI transfer 1.03 / 1.02
    // (pushed 0.82 / 1.05; forced, six launches each: direct x1.17-1.22 of Open MPI's busbw
    // at both, pushed x1.01-1.83 and x0.72-1.39).
    {Collective::kBroadcast, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 32 * KiB), "direct"},
    // all_to_all, 4 KiB blocks: pipelined 0.29, mesh 0.35, the tables' pushed 0.43; 16 KiB
    // blocks: pushed 0.77, the tables' pipelined 0.91.
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(2 * KiB + 1, 4 * KiB), "pipelined"},
    {Collective::kAllToAll, Buffers::kPlain, kTwoMembers(8 * KiB + 1, 16 * KiB), "pushed"},
};

constexpr MachineProfile kProfiles[] = {
    {"amd-zen4",
     "AMD EPYC (family 25 model 17), 2 cores, 2026-12-04",
     {"AuthenticAMD", 25, 0x10, 0x1f},
     kAmdZen4},
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
  if (!value || env::trim(*value) == "auto") return profile_for(this_cpu());
  return find_profile(env::trim(*value), "RANKFLOW_MACHINE");
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
