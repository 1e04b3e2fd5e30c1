// The algorithm table and selection (see registry.h).
#include "collectives/registry.h"

#include <cstdlib>

#include "collectives/coll_context.h"
#include "common/log.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

//  name, run, summary, label, writes_dst, stages_src, pushes
constexpr AllreduceAlgorithm kAllreduce[] = {
    {"onephase", &allreduce_onephase, "mesh: every member sees every input", "allreduce(onephase)",
     true, false, &onephase_pushes},
    {"twophase", &allreduce_twophase, "reduce-scatter then allgather over the mesh",
     "allreduce(twophase)", true, true, nullptr},
    {"ring", &allreduce_ring, "reduce-scatter and allgather around one ring", "allreduce(ring)",
     false, false, nullptr},
    {"bidirectional_ring", &allreduce_bidirectional_ring, "two half-rings, opposite directions",
     "allreduce(bidirectional_ring)", false, false, nullptr},
    {"ibing", &allreduce_ibing, "interleaved bidirectional ring (Zong et al.)", "allreduce(ibing)",
     false, false, nullptr},
};

std::string valid_names() {
  std::string names;
  for (const auto& a : kAllreduce)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

size_t parse_size(std::string_view text, std::string_view rule) {
  text = trim(text);
  if (text == "inf") return SIZE_MAX;
  size_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + static_cast<size_t>(text[i] - '0');
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
    throw InvalidArgument("RANKFLOW_ALLREDUCE: '" + std::string(text) + "' in '" +
                          std::string(rule) +
                          "' is not a size (bytes with optional k, m, g, or inf)");
  }
  return value * scale;
}

}  // namespace

std::span<const AllreduceAlgorithm> allreduce_algorithms() {
  return kAllreduce;
}

const AllreduceAlgorithm& find_allreduce(std::string_view name) {
  for (const auto& a : kAllreduce) {
    if (a.name == name) return a;
  }
  throw InvalidArgument("unknown allreduce algorithm '" + std::string(name) +
                        "'; valid algorithms are " + valid_names() + " (or auto)");
}

std::vector<SizeRule> parse_size_rules(std::string_view spec) {
  std::vector<SizeRule> rules;
  spec = trim(spec);
  if (spec.find(':') == std::string_view::npos) {
    rules.push_back({0, SIZE_MAX, &find_allreduce(spec)});
    return rules;
  }
  while (!spec.empty()) {
    const size_t end = spec.find(';');
    const std::string_view rule = trim(spec.substr(0, end));
    spec = end == std::string_view::npos ? std::string_view{} : spec.substr(end + 1);
    if (rule.empty()) continue;
    const size_t colon = rule.find(':');
    const size_t dash = rule.find('-', colon == std::string_view::npos ? 0 : colon);
    if (colon == std::string_view::npos || dash == std::string_view::npos) {
      throw InvalidArgument("RANKFLOW_ALLREDUCE: rule '" + std::string(rule) +
                            "' is not name:min-max (for example onephase:0-64k)");
    }
    const size_t lo = parse_size(rule.substr(colon + 1, dash - colon - 1), rule);
    const size_t hi = parse_size(rule.substr(dash + 1), rule);
    if (lo >= hi) {
      throw InvalidArgument("RANKFLOW_ALLREDUCE: rule '" + std::string(rule) +
                            "' has an empty size range");
    }
    rules.push_back({lo, hi, &find_allreduce(trim(rule.substr(0, colon)))});
  }
  return rules;
}

const AllreduceAlgorithm& default_allreduce(size_t bytes, int /*members*/) {
  // Up to 4 KiB onephase pushes: one round, data and flag land in the peer's inbox together.
  // Above, twophase wins (2 ranks, 2026-11-30 sweep: 8 KiB plain 0.69 us vs 0.84, 16 KiB plain
  // 0.98 vs 1.53, symmetric equal out of place and 2-3x faster in place): each member reads
  // 2(P-1)/P of the message instead of P-1, reduces only its own part, and on symmetric memory
  // delivers it in the same round (bench/coll, docs/performance.md).
  if (bytes <= CollContext::kInboxBytes) return kAllreduce[0];
  return kAllreduce[1];
}

std::vector<SizeRule> overrides_from_environment() {
  const char* env = std::getenv("RANKFLOW_ALLREDUCE");
  if (env == nullptr || *env == '\0') return {};
  return parse_size_rules(env);
}

const AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes, int members,
                                           const std::vector<SizeRule>& overrides) {
  if (requested != "auto") return find_allreduce(requested);
  const AllreduceAlgorithm* chosen = nullptr;
  for (const SizeRule& rule : overrides) {
    if (bytes >= rule.min_bytes && bytes < rule.max_bytes) {
      chosen = rule.algorithm;
      break;
    }
  }
  if (chosen == nullptr) chosen = &default_allreduce(bytes, members);
  if (log::enabled(env::LogLevel::kDebug)) {
    log::debug("allreduce of ", bytes, " bytes on ", members, " members: ", chosen->name);
  }
  return *chosen;
}

}  // namespace rankflow::coll
