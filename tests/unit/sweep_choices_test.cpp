// The regression guard of the algorithm tables, without timing: collectives/sweep_choices.txt
// holds what the latest sweep (scripts/sweep-choices.py) found fastest for each collective,
// buffer kind and message size, and the tables' built-in choice must be one of the algorithms
// it accepts there. A change to a table that the sweep does not back fails here, and a new
// sweep that disagrees with a table shows as a diff of the data file. Each machine profile
// (collectives/machine_profile.h) is held the same way to its own sweep,
// collectives/sweep_choices.<profile>.txt, and may change no choice that sweep did not measure.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/machine_profile.h"
#include "collectives/registry.h"

namespace rankflow::coll {
namespace {

struct Choice {
  std::string collective;
  Buffers buffers;
  int members;
  size_t bytes;
  std::vector<std::string> accepted;  // the fastest first, then any within the tolerance
  int line;
};

// collectives/sweep_choices.txt, or with a profile's name, collectives/sweep_choices.<name>.txt.
std::string choices_file(std::string_view profile = {}) {
  std::string path = RANKFLOW_SWEEP_CHOICES;
  if (profile.empty()) return path;
  return path.substr(0, path.size() - 3) + std::string(profile) + ".txt";
}

std::vector<Choice> read_choices(const std::string& path = choices_file()) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<Choice> choices;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream fields(text);
    Choice c;
    std::string buffers;
    fields >> c.collective >> buffers >> c.members >> c.bytes;
    EXPECT_TRUE(buffers == "symmetric" || buffers == "user") << "line " << line << ": " << text;
    c.buffers = buffers == "user" ? Buffers::kPlain : Buffers::kSymmetric;
    for (std::string name; fields >> name;)
      c.accepted.push_back(name);
    EXPECT_FALSE(fields.fail() && c.accepted.empty()) << "line " << line << ": " << text;
    c.line = line;
    choices.push_back(c);
  }
  return choices;
}

template <typename Args>
std::string_view builtin_name(const AlgorithmTable<Args>& table, const Choice& c,
                              const MachineRules& machine) {
  // The sweep timed blocking calls of a library-mode communicator: Open MPI's collective may
  // run them.
  return table.builtin(c.bytes, c.members, true, c.buffers, true, rules_for(machine, table)).name;
}

// The tables' choice for the row, with `machine`'s rules (none: the generic tables).
std::string_view table_choice(const Choice& c, const MachineRules& machine = {}) {
  if (c.collective == "allreduce") return builtin_name(allreduce_table(), c, machine);
  if (c.collective == "allgather") return builtin_name(allgather_table(), c, machine);
  if (c.collective == "reduce_scatter") return builtin_name(reduce_scatter_table(), c, machine);
  if (c.collective == "broadcast") return builtin_name(broadcast_table(), c, machine);
  if (c.collective == "all_to_all") return builtin_name(all_to_all_table(), c, machine);
  ADD_FAILURE() << "line " << c.line << ": no table '" << c.collective << "'";
  return {};
}

TEST(SweepChoices, EveryCollectiveAndBufferKindIsCovered) {
  std::map<std::string, int> rows;
  for (const Choice& c : read_choices())
    ++rows[c.collective + (c.buffers == Buffers::kPlain ? " user" : " symmetric")];
  for (const char* collective :
       {"allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all"}) {
    for (const char* buffers : {" symmetric", " user"}) {
      // 4 B to 64 MiB: 25 sizes (24 for the exchanges, whose pushed path needs a byte).
      EXPECT_GE(rows[collective + std::string(buffers)], 24) << collective << buffers;
    }
  }
}

// Each row's sweep accepts what the tables with `machine`'s rules choose.
void expect_sweep_accepts(const std::vector<Choice>& choices, const MachineRules& machine,
                          const std::string& file) {
  for (const Choice& c : choices) {
    const std::string_view chosen = table_choice(c, machine);
    bool accepted = false;
    std::string names;
    for (const std::string& name : c.accepted) {
      accepted |= chosen == name;
      names += (names.empty() ? "" : " or ") + name;
    }
    EXPECT_TRUE(accepted) << file << " line " << c.line << ": " << c.collective << " on "
                          << (c.buffers == Buffers::kPlain ? "plain" : "symmetric") << " buffers, "
                          << c.bytes << " bytes, " << c.members << " members: the table chooses "
                          << chosen << ", the sweep found " << names << " fastest";
  }
}

TEST(SweepChoices, TablesChooseWhatTheLatestSweepFoundFastest) {
  expect_sweep_accepts(read_choices(), {}, "sweep_choices.txt");
}

TEST(SweepChoices, EachMachineProfileChoosesWhatItsSweepFoundFastest) {
  for (const MachineProfile& profile : machine_profiles()) {
    const std::string file = choices_file(profile.name);
    const std::vector<Choice> choices = read_choices(file);
    EXPECT_FALSE(choices.empty()) << file;
    expect_sweep_accepts(choices, machine_rules(&profile), file);
  }
}

TEST(SweepChoices, EachMachineProfileChangesOnlyWhatItsSweepMeasured) {
  for (const MachineProfile& profile : machine_profiles()) {
    std::set<std::string> measured;
    auto key = [](const Choice& c) {
      return c.collective + (c.buffers == Buffers::kPlain ? " user " : " symmetric ") +
             std::to_string(c.members) + " " + std::to_string(c.bytes);
    };
    for (const Choice& c : read_choices(choices_file(profile.name)))
      measured.insert(key(c));
    const MachineRules rules = machine_rules(&profile);
    for (const Choice& c : read_choices()) {
      if (measured.count(key(c)) != 0) continue;
      EXPECT_EQ(table_choice(c, rules), table_choice(c))
          << profile.name << " changes " << key(c) << ", which its sweep did not measure";
    }
  }
}

}  // namespace
}  // namespace rankflow::coll
