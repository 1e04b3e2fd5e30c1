// Machine profiles (collectives/machine_profile.h): detection by CPU, RANKFLOW_MACHINE, and a
// profile's choices taking precedence over the tables' measured ranges where they hold, and
// nowhere else.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/link_probe.h"
#include "collectives/machine_profile.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

const MachineProfile& amd_zen4() {
  const MachineProfile* p = find_profile("amd-zen4", "test");
  EXPECT_NE(p, nullptr);
  return *p;
}

TEST(MachineProfile, ChosenByVendorFamilyAndModel) {
  EXPECT_EQ(profile_for({"AuthenticAMD", 25, 17}), &amd_zen4());
  EXPECT_EQ(profile_for({"AuthenticAMD", 25, 0x1f}), &amd_zen4());
  EXPECT_EQ(profile_for({"AuthenticAMD", 25, 1}), nullptr);  // Zen 3: not measured
  const MachineProfile* zen5 = find_profile("amd-zen5", "test");
  ASSERT_NE(zen5, nullptr);
  EXPECT_EQ(profile_for({"AuthenticAMD", 26, 2}), zen5);
  EXPECT_EQ(profile_for({"AuthenticAMD", 26, 0x1f}), zen5);
  EXPECT_EQ(profile_for({"AuthenticAMD", 26, 0x44}), nullptr);  // Zen 5 desktop: not measured
  const MachineProfile* emerald_rapids = find_profile("intel-emr", "test");
  ASSERT_NE(emerald_rapids, nullptr);
  EXPECT_EQ(profile_for({"GenuineIntel", 6, 207}), emerald_rapids);
  EXPECT_EQ(profile_for({"GenuineIntel", 6, 143}), nullptr);  // Sapphire Rapids: not measured
  EXPECT_EQ(profile_for({"GenuineIntel", 6, 208}), nullptr);
  EXPECT_EQ(profile_for({}), nullptr);
#if defined(__x86_64__)
  const CpuId cpu = this_cpu();
  EXPECT_EQ(cpu.vendor.size(), 12U) << describe(cpu);  // cpuid's vendor string
  EXPECT_GT(cpu.family, 0U) << describe(cpu);
#endif
}

// RANKFLOW_MACHINE as it was, once the test is done with it.
class KeepsMachineVariable {
 public:
  KeepsMachineVariable() {
    if (const char* before = std::getenv("RANKFLOW_MACHINE")) saved_ = before;
  }
  ~KeepsMachineVariable() {
    if (saved_) {
      ::setenv("RANKFLOW_MACHINE", saved_->c_str(), 1);
    } else {
      ::unsetenv("RANKFLOW_MACHINE");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(MachineProfile, NamedInTheEnvironment) {
  const KeepsMachineVariable keep;
  EXPECT_EQ(find_profile("generic", "RANKFLOW_MACHINE"), nullptr);
  EXPECT_EQ(profile_name(nullptr), "generic");
  EXPECT_EQ(profile_name(&amd_zen4()), "amd-zen4");
  try {
    find_profile("zen9", "RANKFLOW_MACHINE");
    FAIL() << "no error for an unknown profile";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("RANKFLOW_MACHINE='zen9'"), std::string::npos) << what;
    EXPECT_NE(what.find("auto, generic, amd-zen4"), std::string::npos) << what;
  }
  ::setenv("RANKFLOW_MACHINE", "generic", 1);
  EXPECT_EQ(profile_from_environment(), nullptr);
  ::setenv("RANKFLOW_MACHINE", " amd-zen4 ", 1);
  EXPECT_EQ(profile_from_environment(), &amd_zen4());
  ::setenv("RANKFLOW_MACHINE", "auto", 1);
  EXPECT_EQ(profile_from_environment(), profile_for(this_cpu()));
  ::setenv("RANKFLOW_MACHINE", "  ", 1);  // empty: auto
  EXPECT_EQ(profile_from_environment(), profile_for(this_cpu()));
  ::setenv("RANKFLOW_MACHINE", "intel", 1);
  EXPECT_THROW(profile_from_environment(), InvalidArgument);
  ::unsetenv("RANKFLOW_MACHINE");
  EXPECT_EQ(profile_from_environment(), profile_for(this_cpu()));
}

std::vector<size_t> profile_sizes() {
  std::vector<size_t> all = {0};
  for (size_t bytes = 1; bytes <= (size_t{64} << 20); bytes *= 2) {
    all.push_back(bytes);
    all.push_back(bytes + 1);
  }
  return all;
}

// Where a rule of `rules` holds, the table with the rules chooses its algorithm (blocking calls
// of a library-mode communicator, two members); everywhere else the same as without them.
template <typename Args>
void expect_rules_decide_where_they_hold(
    const AlgorithmTable<Args>& table,
    std::type_identity_t<typename AlgorithmTable<Args>::Measured> rules) {
  for (Buffers buffers : {Buffers::kPlain, Buffers::kSymmetric}) {
    for (size_t bytes : profile_sizes()) {
      const Algorithm<Args>* ruled = nullptr;
      for (const MeasuredRule<Args>& r : rules) {
        if (!ruled && r.buffers == buffers && r.limits.holds(bytes, 2, true)) ruled = r.algorithm;
      }
      const Algorithm<Args>& with = table.builtin(bytes, 2, true, buffers, true, rules);
      const Algorithm<Args>& without = table.builtin(bytes, 2, true, buffers, true);
      if (ruled != nullptr) {
        EXPECT_EQ(with.name, ruled->name) << table.collective() << " " << bytes << " B";
      } else {
        EXPECT_EQ(with.name, without.name) << table.collective() << " " << bytes << " B";
      }
    }
  }
}

TEST(MachineProfile, ItsChoicesDecideWhereTheyHoldAndNowhereElse) {
  for (const MachineProfile& profile : machine_profiles()) {
    SCOPED_TRACE(std::string(profile.name));
    const MachineRules rules = machine_rules(&profile);  // every name resolves, or this throws
    EXPECT_EQ(rules.profile, &profile);
    size_t resolved = rules.allreduce.size() + rules.allgather.size() +
                      rules.reduce_scatter.size() + rules.broadcast.size() +
                      rules.all_to_all.size();
    EXPECT_EQ(resolved, profile.choices.size());
    for (const MachineChoice& c : profile.choices)
      EXPECT_FALSE(c.limits.empty()) << c.algorithm;
    expect_rules_decide_where_they_hold(allreduce_table(), rules_for(rules, allreduce_table()));
    expect_rules_decide_where_they_hold(allgather_table(), rules_for(rules, allgather_table()));
    expect_rules_decide_where_they_hold(all_to_all_table(), rules_for(rules, all_to_all_table()));
    expect_rules_decide_where_they_hold(broadcast_table(), rules_for(rules, broadcast_table()));
    expect_rules_decide_where_they_hold(reduce_scatter_table(),
                                        rules_for(rules, reduce_scatter_table()));
  }
}

TEST(MachineProfile, RulesForTellsTheExchangesApart) {
  const MeasuredRule<ExchangeArgs> gather[] = {
      {Limits{1, 2}, Buffers::kPlain, &allgather_table().find("mesh")}};
  const MeasuredRule<ExchangeArgs> all_to_all[] = {
      {Limits{3, 4}, Buffers::kPlain, &all_to_all_table().find("mesh")}};
  MachineRules rules;
  rules.allgather.assign(std::begin(gather), std::end(gather));
  rules.all_to_all.assign(std::begin(all_to_all), std::end(all_to_all));
  EXPECT_EQ(rules_for(rules, allgather_table()).front().limits.min_bytes, 1U);
  EXPECT_EQ(rules_for(rules, all_to_all_table()).front().limits.min_bytes, 3U);
}

TEST(MachineProfile, OpenMpiRuleFallsBackToAPushWhereOpenMpiMayNotRun) {
  // As a table's own measured range for Open MPI: a non-blocking call takes the entry that
  // pushes the message.
  const MeasuredRule<BroadcastArgs> rules[] = {
      {Limits{1024, 2048}, Buffers::kPlain, &broadcast_table().find("mpi")}};
  EXPECT_TRUE(broadcast_table().builtin(2048, 2, true, Buffers::kPlain, true, rules).open_mpi);
  EXPECT_EQ(broadcast_table().builtin(2048, 2, true, Buffers::kPlain, false, rules).name, "pushed");
  // Even where the table's own measured ranges name another algorithm (`cross_memory` for 16 KiB
  // allgather blocks on plain buffers): the machine measured Open MPI, whose nearest is a push.
  const MeasuredRule<ExchangeArgs> gather[] = {
      {Limits{16384, 16384}, Buffers::kPlain, &allgather_table().find("mpi")}};
  EXPECT_EQ(allgather_table().builtin(16384, 2, true, Buffers::kPlain, false).name, "cross_memory");
  EXPECT_EQ(allgather_table().builtin(16384, 2, true, Buffers::kPlain, false, gather).name,
            "pushed");
  EXPECT_TRUE(allgather_table().builtin(16384, 2, true, Buffers::kPlain, true, gather).open_mpi);
  // A rule whose algorithm does not serve the message is passed over.
  const MeasuredRule<BroadcastArgs> streamed[] = {
      {Limits{1024, 4096}, Buffers::kPlain, &broadcast_table().find("streamed")}};
  EXPECT_EQ(&broadcast_table().builtin(4096, 2, true, Buffers::kPlain, true, streamed),
            &broadcast_table().builtin(4096, 2, true, Buffers::kPlain, true));
}

// The probe behind the cross-memory exchanges' direction: it measures in the first call and every
// kEvery-th after (the same calls on every member), and a round trip is two hops of the
// shortest lap of the token around the members.
TEST(LinkProbe, MeasuresEveryKEveryCallsAndHalvesTheShortestLapPerPairOfHops) {
  LinkProbe probe;
  EXPECT_EQ(probe.round_trip().count(), 0);
  int due = 0;
  for (uint64_t call = 0; call < 3 * LinkProbe::kEvery; ++call) {
    if (probe.due()) {
      EXPECT_EQ(call % LinkProbe::kEvery, 0u) << call;
      ++due;
    }
  }
  EXPECT_EQ(due, 3);
  // Laps of 100, 70, 80, ... ns: the shortest is 70.
  const long long lap_ns[LinkProbe::kRounds - 1] = {100, 70, 80, 90, 75, 85, 95};
  LinkProbe::Arrivals laps{};
  for (int round = 1; round < LinkProbe::kRounds; ++round)
    laps[static_cast<size_t>(round)] =
        laps[static_cast<size_t>(round) - 1] + std::chrono::nanoseconds(lap_ns[round - 1]);
  using std::chrono::nanoseconds;
  probe.record(laps, 2);
  EXPECT_EQ(probe.round_trip(), nanoseconds(70));
  probe.record(laps, 4);  // four hops a lap
  EXPECT_EQ(probe.round_trip(), nanoseconds(35));
  LinkProbe::force_round_trip(nanoseconds(1000));  // tests put a member in either mode
  probe.record(laps, 2);
  EXPECT_EQ(probe.round_trip(), nanoseconds(1000));
  LinkProbe::force_round_trip(nanoseconds(0));
  probe.record(laps, 2);
  EXPECT_EQ(probe.round_trip(), nanoseconds(70));
}

// Staging the `probed` exchanges is the AMD profile's measured choice (on two members, in the
// fast mode's round trip), never by a profile without a fast mode (the default); its choices name
// `probed` where it measured staging faster in that mode.
TEST(MachineProfile, StagedExchangesAreMeasuredPerProfile) {
  EXPECT_EQ(MachineProfile{}.fast_round_trip_ns, 0u);  // no fast mode: never stages
  EXPECT_EQ(LinkProbe{}.verdict().stages, 0u);         // no staging before the first probe
  const MachineProfile* amd = find_profile("amd-zen4", "RANKFLOW_MACHINE");
  ASSERT_NE(amd, nullptr);
  EXPECT_EQ(amd->staged.members, 2);
  EXPECT_GT(amd->fast_round_trip_ns, 0u);
  int probed = 0;
  for (const MachineChoice& choice : amd->choices) {
    if (choice.algorithm != "probed") continue;
    ++probed;
    EXPECT_EQ(choice.limits.min_bytes, size_t{256} << 10);
    EXPECT_EQ(choice.limits.max_bytes,
              choice.collective == Collective::kAllgather ? size_t{2} << 20 : size_t{1} << 20);
  }
  EXPECT_EQ(probed, 2);  // allgather and all_to_all
}

// The tables split a plain twophase allreduce into at most 4 segments of at least 1 MiB up to 4
// MiB and run larger messages whole; the Zen 5 and Intel Xeon profiles split larger ones into
// 1 MiB segments where they come out equal, and a communicator without a profile takes the
// tables' split.
TEST(MachineProfile, TwophaseSegmentsFollowTheAgreedProfile) {
  const size_t mib_f32 = (size_t{1} << 20) / 4;
  const TwophaseSegments tables = twophase_segments(nullptr);
  EXPECT_EQ(twophase_segment_elements(mib_f32 / 2, 4, tables), mib_f32);  // one, partly used
  EXPECT_EQ(twophase_segment_elements(4 * mib_f32 - 10, 4, tables), mib_f32);
  EXPECT_EQ(twophase_segment_elements(4 * mib_f32 + 1, 4, tables), 4 * mib_f32 + 1);  // whole
  const MachineProfile* zen5 = find_profile("amd-zen5", "RANKFLOW_MACHINE");
  ASSERT_NE(zen5, nullptr);
  const TwophaseSegments split = twophase_segments(zen5);
  for (size_t count : {4 * mib_f32 - 10, 8 * mib_f32, 9 * mib_f32, 64 * mib_f32})
    EXPECT_EQ(twophase_segment_elements(count, 4, split), mib_f32) << count;
  EXPECT_EQ(twophase_segment_elements(9 * mib_f32, 8, split), mib_f32 / 2);  // f64: 1 MiB too
  // Above 4 MiB only equal segments (the parts are handed off only then): else whole.
  for (size_t count : {4 * mib_f32 + 1, 9 * mib_f32 - 3000})
    EXPECT_EQ(twophase_segment_elements(count, 4, split), count) << count;
  const MachineProfile* zen4 = find_profile("amd-zen4", "RANKFLOW_MACHINE");
  ASSERT_NE(zen4, nullptr);
  EXPECT_EQ(twophase_segment_elements(8 * mib_f32, 4, twophase_segments(zen4)), 8 * mib_f32);
  // The Intel Xeon's profile splits as the Zen 5's.
  const MachineProfile* emerald_rapids = find_profile("intel-emr", "RANKFLOW_MACHINE");
  ASSERT_NE(emerald_rapids, nullptr);
  const TwophaseSegments xeon = twophase_segments(emerald_rapids);
  for (size_t count : {8 * mib_f32, 64 * mib_f32})
    EXPECT_EQ(twophase_segment_elements(count, 4, xeon), mib_f32) << count;
  EXPECT_EQ(twophase_segment_elements(9 * mib_f32 - 3000, 4, xeon), 9 * mib_f32 - 3000);
}

// Members read their parts of the peers' inputs (allreduce_twophase_read.cpp) from 2 MiB on the
// Intel Xeon, where it was measured; no other profile, nor the tables, reads.
TEST(MachineProfile, TwophaseReadsFromTheMeasuredSize) {
  EXPECT_EQ(twophase_segments(find_profile("intel-emr", "test")).reads_from, size_t{2} << 20);
  EXPECT_EQ(twophase_segments(find_profile("amd-zen5", "test")).reads_from, SIZE_MAX);
  EXPECT_EQ(twophase_segments(find_profile("amd-zen4", "test")).reads_from, SIZE_MAX);
  EXPECT_EQ(twophase_segments(nullptr).reads_from, SIZE_MAX);
}

// Own blocks are streamed from a 16 MiB recv on the AMD Zen 4 and the Intel Xeon, the Xeon's
// all_to_all from 2 MiB, never on the Zen 5 (machine_profile.cpp).
TEST(MachineProfile, OwnBlocksStreamFromTheMeasuredRecvSize) {
  const size_t mib = size_t{1} << 20;
  const OwnBlockStreaming& zen4 = find_profile("amd-zen4", "test")->stream_own_block;
  EXPECT_EQ(zen4.allgather_from_recv, 16 * mib);
  EXPECT_EQ(zen4.all_to_all_from_recv, 16 * mib);
  const OwnBlockStreaming& emr = find_profile("intel-emr", "test")->stream_own_block;
  EXPECT_EQ(emr.allgather_from_recv, 16 * mib);
  EXPECT_EQ(emr.all_to_all_from_recv, 2 * mib);
  const OwnBlockStreaming& zen5 = find_profile("amd-zen5", "test")->stream_own_block;
  EXPECT_EQ(zen5.allgather_from_recv, SIZE_MAX);
  EXPECT_EQ(zen5.all_to_all_from_recv, SIZE_MAX);
}

}  // namespace
}  // namespace rankflow::coll
