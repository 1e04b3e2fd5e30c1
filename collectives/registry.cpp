// The override parser and the selection over any table (see registry.h); the tables are in
// tables.cpp.
#include "collectives/registry.h"

#include <cstdlib>

#include "common/env.h"
#include "common/log.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

using env::trim;

std::string join(std::span<const std::string_view> names) {
  std::string joined;
  for (std::string_view name : names)
    joined += (joined.empty() ? "" : ", ") + std::string(name);
  return joined;
}

[[noreturn]] void bad(std::string_view variable, const std::string& what) {
  throw InvalidArgument(std::string(variable) + ": " + what);
}

size_t parse_size(std::string_view text, std::string_view rule, std::string_view variable) {
  text = trim(text);
  if (text == "inf") return SIZE_MAX;
  size_t value = 0;
  size_t i = 0;
  bool overflow = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    overflow = overflow || __builtin_mul_overflow(value, 10, &value) ||
               __builtin_add_overflow(value, static_cast<size_t>(text[i] - '0'), &value);
  }
  const std::string_view suffix = text.substr(i);
  size_t scale = 1;
  if (suffix == "k" || suffix == "K")
    scale = size_t{1} << 10;
  else if (suffix == "m" || suffix == "M")
    scale = size_t{1} << 20;
  else if (suffix == "g" || suffix == "G")
    scale = size_t{1} << 30;
  else if (!suffix.empty())
    i = 0;  // not a number after all
  if (i == 0) {
    bad(variable, "'" + std::string(text) + "' in '" + std::string(rule) +
                      "' is not a size (bytes with optional k, m, g, or inf)");
  }
  if (overflow || __builtin_mul_overflow(value, scale, &value)) {
    bad(variable, "'" + std::string(text) + "' in '" + std::string(rule) +
                      "' is larger than any size (at most " + std::to_string(SIZE_MAX) +
                      " bytes; inf for no limit)");
  }
  return value;
}

size_t find_name(std::string_view name, std::string_view spec, std::string_view variable,
                 std::span<const std::string_view> names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  bad(variable, "unknown algorithm '" + std::string(name) + "' in '" + std::string(spec) +
                    "'; valid algorithms are " + join(names));
}

ParsedRule parse_rule(std::string_view rule, std::string_view variable,
                      std::span<const std::string_view> names) {
  const size_t colon = rule.find(':');
  const size_t dash = rule.find('-', colon == std::string_view::npos ? 0 : colon);
  if (colon == std::string_view::npos || dash == std::string_view::npos) {
    bad(variable, "rule '" + std::string(rule) + "' is not name:min-max (for example " +
                      std::string(names.front()) + ":0-64k)");
  }
  const size_t lo = parse_size(rule.substr(colon + 1, dash - colon - 1), rule, variable);
  const size_t hi = parse_size(rule.substr(dash + 1), rule, variable);
  if (lo >= hi) bad(variable, "rule '" + std::string(rule) + "' has an empty size range");
  return {lo, hi, find_name(trim(rule.substr(0, colon)), rule, variable, names)};
}

std::string range(size_t lo, size_t hi) {
  return std::to_string(lo) + "-" + (hi == SIZE_MAX ? std::string("inf") : std::to_string(hi));
}

}  // namespace

std::string Limits::describe() const {
  if (empty()) return "no message";
  std::string text = "messages of " + range(min_bytes, max_bytes) + " bytes";
  if (min_members > 1 || max_members < INT_MAX) {
    text += " on ";
    text += std::to_string(min_members);
    if (max_members == INT_MAX) {
      text += " or more";
    } else if (max_members != min_members) {
      text += '-';
      text += std::to_string(max_members);
    }
    text += " members";
  }
  if (needs_inbox) text += " with an inbox";
  return text;
}

std::string Ranges::describe() const {
  std::string text;
  for (const Limits& set : sets) {
    if (set.empty()) continue;
    if (!text.empty()) text += " or ";
    text += set.describe();
  }
  return text.empty() ? "no message" : text;
}

std::vector<ParsedRule> parse_size_rules(std::string_view spec, std::string_view variable,
                                         std::span<const std::string_view> names) {
  std::vector<ParsedRule> rules;
  spec = trim(spec);
  if (spec.find(':') == std::string_view::npos) {
    rules.push_back({0, SIZE_MAX, find_name(spec, spec, variable, names)});
    return rules;
  }
  while (!spec.empty()) {
    const size_t end = spec.find(';');
    const std::string_view rule = trim(spec.substr(0, end));
    spec = end == std::string_view::npos ? std::string_view{} : spec.substr(end + 1);
    if (!rule.empty()) rules.push_back(parse_rule(rule, variable, names));
  }
  return rules;
}

template <typename Args>
std::string AlgorithmTable<Args>::valid_names() const {
  std::string names;
  for (const Entry& a : algorithms_)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

template <typename Args>
const Algorithm<Args>& AlgorithmTable<Args>::find(std::string_view name) const {
  for (const Entry& a : algorithms_) {
    if (a.name == name) return a;
  }
  throw InvalidArgument("unknown " + std::string(collective_) + " algorithm '" + std::string(name) +
                        "'; valid algorithms are " + valid_names() + " (or auto)");
}

template <typename Args>
typename AlgorithmTable<Args>::Rules AlgorithmTable<Args>::parse(std::string_view spec) const {
  std::vector<std::string_view> names;
  for (const Entry& a : algorithms_)
    names.push_back(a.name);
  Rules rules;
  for (const ParsedRule& r : parse_size_rules(spec, variable_, names))
    rules.push_back({r.min_bytes, r.max_bytes, &algorithms_[r.index]});
  return rules;
}

template <typename Args>
typename AlgorithmTable<Args>::Rules AlgorithmTable<Args>::from_environment() const {
  const char* env = std::getenv(variable_);
  if (env == nullptr || *env == '\0') return {};
  return parse(env);
}

template <typename Args>
void AlgorithmTable<Args>::log_choice(size_t bytes, int members, const Rules& rules,
                                      const Entry& chosen) const {
  for (const SizeRule<Args>& rule : rules) {
    if (bytes < rule.min_bytes || bytes >= rule.max_bytes) continue;
    if (rule.algorithm == &chosen) break;
    if (rule.algorithm->open_mpi && rule.algorithm->serves.holds(bytes, members, true)) {
      log::debug(variable_, ": ", rule.algorithm->name, " skipped for ", bytes, " bytes on ",
                 members,
                 " members (Open MPI's collective runs blocking library-mode calls on "
                 "arguments MPI takes only)");
      continue;
    }
    log::debug(variable_, ": ", rule.algorithm->name, " skipped for ", bytes, " bytes on ", members,
               " members (it serves ", rule.algorithm->serves.describe(), ")");
  }
  log::debug(collective_, " of ", bytes, " bytes on ", members, " members: ", chosen.name);
}

template <typename Args>
const Algorithm<Args>& AlgorithmTable<Args>::select(size_t bytes, int members, bool has_inbox,
                                                    const Rules& rules, Buffers buffers,
                                                    bool open_mpi_allowed, Measured machine) const {
  const Entry& chosen =
      choose(bytes, members, has_inbox, rules, buffers, open_mpi_allowed, machine);
  if (log::enabled(env::LogLevel::kDebug)) log_choice(bytes, members, rules, chosen);
  return chosen;
}

template class AlgorithmTable<AllreduceArgs>;
template class AlgorithmTable<ExchangeArgs>;
template class AlgorithmTable<ReduceScatterArgs>;
template class AlgorithmTable<BroadcastArgs>;

Overrides overrides_from_environment() {
  return {allreduce_table().from_environment(), allgather_table().from_environment(),
          reduce_scatter_table().from_environment(), broadcast_table().from_environment(),
          all_to_all_table().from_environment()};
}

const AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes, int members,
                                           const AlgorithmTable<AllreduceArgs>::Rules& overrides,
                                           Buffers buffers, bool open_mpi_allowed) {
  if (requested != "auto") {
    const AllreduceAlgorithm& named = allreduce_table().find(requested);
    if (!named.open_mpi || open_mpi_allowed) return named;
    // "mpi" where Open MPI cannot take the call: the table's own choice instead.
  }
  return allreduce_table().select(bytes, members, true, overrides, buffers, open_mpi_allowed);
}

std::span<const AllreduceAlgorithm> allreduce_algorithms() {
  return allreduce_table().algorithms();
}

const AllreduceAlgorithm& find_allreduce(std::string_view name) {
  return allreduce_table().find(name);
}

const AllreduceAlgorithm& default_allreduce(size_t bytes, int members) {
  return allreduce_table().builtin(bytes, members, true);
}

}  // namespace rankflow::coll
