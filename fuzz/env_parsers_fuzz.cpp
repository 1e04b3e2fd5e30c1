// Fuzz target: the parsers of rankflow's environment variables.
//
// Feeds: the first byte picks the parser, the rest (up to its first NUL, as getenv hands it
// over) is the value: RANKFLOW_TIMEOUT_S (env::parse_timeout), RANKFLOW_LOG, RANKFLOW_BIND,
// RANKFLOW_PROGRESS (common/env.h), and the algorithm rules of RANKFLOW_ALLREDUCE,
// RANKFLOW_ALLGATHER, RANKFLOW_REDUCE_SCATTER, RANKFLOW_BROADCAST and RANKFLOW_ALL_TO_ALL
// (AlgorithmTable::parse, collectives/registry.h: names, size ranges with k/m/g suffixes, inf).
//
// A failure is: a crash, hang or sanitizer report; a parser throwing anything but
// rankflow::InvalidArgument, or one whose message does not name the variable; a timeout that is
// not in (0, 1e6] seconds; rules that differ from what the documented grammar gives (a reference
// parser below, which refuses sizes that do not fit size_t instead of wrapping them).
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/registry.h"
#include "common/env.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace rankflow;

using env::trim;

// One size of the grammar: digits with an optional k, m or g (powers of 1024), or inf.
std::optional<size_t> reference_size(std::string_view text) {
  text = trim(text);
  if (text == "inf") return SIZE_MAX;
  size_t i = 0;
  unsigned __int128 value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
    if (value > SIZE_MAX) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  const std::string_view suffix = text.substr(i);
  unsigned __int128 scale = 1;
  if (suffix == "k" || suffix == "K")
    scale = 1 << 10;
  else if (suffix == "m" || suffix == "M")
    scale = 1 << 20;
  else if (suffix == "g" || suffix == "G")
    scale = 1 << 30;
  else if (!suffix.empty())
    return std::nullopt;
  if (value * scale > SIZE_MAX) return std::nullopt;
  return static_cast<size_t>(value * scale);
}

std::optional<size_t> reference_name(std::string_view name,
                                     const std::vector<std::string_view>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

// "name", or "name:lo-hi;name:lo-hi" with [lo, hi) non-empty; nullopt for a value to refuse.
std::optional<std::vector<coll::ParsedRule>> reference_rules(
    std::string_view spec, const std::vector<std::string_view>& names) {
  std::vector<coll::ParsedRule> rules;
  spec = trim(spec);
  if (spec.find(':') == std::string_view::npos) {
    const auto index = reference_name(spec, names);
    if (!index) return std::nullopt;
    rules.push_back({0, SIZE_MAX, *index});
    return rules;
  }
  while (!spec.empty()) {
    const size_t end = spec.find(';');
    const std::string_view rule = trim(spec.substr(0, end));
    spec = end == std::string_view::npos ? std::string_view{} : spec.substr(end + 1);
    if (rule.empty()) continue;
    const size_t colon = rule.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const size_t dash = rule.find('-', colon);
    if (dash == std::string_view::npos) return std::nullopt;
    const auto lo = reference_size(rule.substr(colon + 1, dash - colon - 1));
    const auto hi = reference_size(rule.substr(dash + 1));
    if (!lo || !hi || *lo >= *hi) return std::nullopt;
    const auto index = reference_name(trim(rule.substr(0, colon)), names);
    if (!index) return std::nullopt;
    rules.push_back({*lo, *hi, *index});
  }
  return rules;
}

template <typename Args>
void table_rules(const coll::AlgorithmTable<Args>& table, const std::string& value) {
  std::vector<std::string_view> names;
  for (const auto& a : table.algorithms())
    names.push_back(a.name);
  const auto expected = reference_rules(value, names);
  typename coll::AlgorithmTable<Args>::Rules rules;
  const bool parsed = fuzz::refused_or_ran<InvalidArgument>([&] { rules = table.parse(value); },
                                                            table.variable(), table.variable());
  if (!parsed) {
    fuzz::expect(!expected.has_value(), std::string(table.variable()) + "='" + value +
                                            "' refused, but the grammar accepts it");
    return;
  }
  fuzz::expect(expected.has_value(), std::string(table.variable()) + "='" + value +
                                         "' accepted, but the grammar refuses it");
  fuzz::expect(rules.size() == expected->size(),
               std::string(table.variable()) + "='" + value + "': another number of rules");
  for (size_t i = 0; i < rules.size(); ++i) {
    const coll::ParsedRule& e = (*expected)[i];
    fuzz::expect(rules[i].min_bytes == e.min_bytes && rules[i].max_bytes == e.max_bytes &&
                     rules[i].algorithm == &table.algorithms()[e.index],
                 std::string(table.variable()) + "='" + value + "': rule " + std::to_string(i) +
                     " is " + std::to_string(rules[i].min_bytes) + "-" +
                     std::to_string(rules[i].max_bytes) + " " +
                     std::string(rules[i].algorithm->name) + ", the grammar gives " +
                     std::to_string(e.min_bytes) + "-" + std::to_string(e.max_bytes) + " " +
                     std::string(names[e.index]));
  }
}

template <typename Fn>
void named_parser(const char* variable, const std::string& value, Fn&& fn) {
  fuzz::refused_or_ran<InvalidArgument>([&] { fn(variable, value); }, variable, variable);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string value(reinterpret_cast<const char*>(data + 1), size - 1);
  value = value.substr(0, value.find('\0'));  // what getenv can hand over
  switch (data[0] % 9) {
    case 0:
      named_parser("RANKFLOW_TIMEOUT_S", value, [](const char* var, const std::string& v) {
        const auto timeout = env::parse_timeout(var, v);
        fuzz::expect(timeout.count() > 0 && timeout <= std::chrono::seconds(1000000),
                     std::string(var) + "='" + v + "' gave a timeout of " +
                         std::to_string(timeout.count()) + " ns");
      });
      break;
    case 1:
      named_parser("RANKFLOW_LOG", value, [](const char* var, const std::string& v) {
        const auto level = env::parse_log_level(var, v);
        fuzz::expect(level >= env::LogLevel::kError && level <= env::LogLevel::kDebug,
                     "a log level out of range");
      });
      break;
    case 2:
      named_parser("RANKFLOW_BIND", value, [](const char* var, const std::string& v) {
        (void)env::parse_bind_policy(var, v);
      });
      break;
    case 3:
      named_parser("RANKFLOW_PROGRESS", value, [](const char* var, const std::string& v) {
        (void)env::parse_progress_mode(var, v);
      });
      break;
    case 4: table_rules(coll::allreduce_table(), value); break;
    case 5: table_rules(coll::allgather_table(), value); break;
    case 6: table_rules(coll::reduce_scatter_table(), value); break;
    case 7: table_rules(coll::broadcast_table(), value); break;
    default: table_rules(coll::all_to_all_table(), value); break;
  }
  return 0;
}
