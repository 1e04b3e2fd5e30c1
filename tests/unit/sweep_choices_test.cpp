// The regression guard of the algorithm tables, without timing: collectives/sweep_choices.txt
// holds what the latest sweep (scripts/sweep-choices.py) found fastest for each collective,
// buffer kind and message size, and the tables' built-in choice must be one of the algorithms
// it accepts there. A change to a table that the sweep does not back fails here, and a new
// sweep that disagrees with a table shows as a diff of the data file.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

std::vector<Choice> read_choices() {
  std::ifstream in(RANKFLOW_SWEEP_CHOICES);
  EXPECT_TRUE(in) << "cannot read " << RANKFLOW_SWEEP_CHOICES;
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
std::string_view builtin_name(const AlgorithmTable<Args>& table, const Choice& c) {
  // The sweep timed blocking calls of a library-mode communicator: Open MPI's collective may
  // run them.
  return table.builtin(c.bytes, c.members, true, c.buffers, true).name;
}

std::string_view table_choice(const Choice& c) {
  if (c.collective == "allreduce") return builtin_name(allreduce_table(), c);
  if (c.collective == "allgather") return builtin_name(allgather_table(), c);
  if (c.collective == "reduce_scatter") return builtin_name(reduce_scatter_table(), c);
  if (c.collective == "broadcast") return builtin_name(broadcast_table(), c);
  if (c.collective == "all_to_all") return builtin_name(all_to_all_table(), c);
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

TEST(SweepChoices, TablesChooseWhatTheLatestSweepFoundFastest) {
  for (const Choice& c : read_choices()) {
    const std::string_view chosen = table_choice(c);
    bool accepted = false;
    std::string names;
    for (const std::string& name : c.accepted) {
      accepted |= chosen == name;
      names += (names.empty() ? "" : " or ") + name;
    }
    EXPECT_TRUE(accepted) << "sweep_choices.txt line " << c.line << ": " << c.collective << " on "
                          << (c.buffers == Buffers::kPlain ? "plain" : "symmetric") << " buffers, "
                          << c.bytes << " bytes, " << c.members << " members: the table chooses "
                          << chosen << ", the sweep found " << names << " fastest";
  }
}

}  // namespace
}  // namespace rankflow::coll
