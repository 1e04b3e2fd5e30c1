// The algorithm table: every allreduce algorithm by name, the default choice by message size
// and member count, and the RANKFLOW_ALLREDUCE override ("ring", or size ranges such as
// "onephase:0-64k;twophase:64k-inf"). Pure apart from reading the environment.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"

namespace rankflow::coll {

using AllreduceFn = CollTask (*)(CollContext&, AllreduceArgs);

// One entry of the table: the algorithm and what it can do, so callers choose by capability.
struct AllreduceAlgorithm {
  std::string_view name;
  AllreduceFn run;
  std::string_view summary;
  const char* label;  // "allreduce(<name>)", as diagnostics name it
  // Writes the result to AllreduceArgs::dst_ptr itself (no copy out of the staging window).
  bool writes_dst;
  // Stages the input from AllreduceArgs::src_ptr itself, only the parts peers read.
  bool stages_src;
  // Non-null when small messages skip the window: true for sizes it pushes straight from and
  // into the caller's memory (nothing staged, any memory).
  bool (*pushes)(const CollContext& c, size_t bytes);
};

std::span<const AllreduceAlgorithm> allreduce_algorithms();
// Throws InvalidArgument listing the valid names.
const AllreduceAlgorithm& find_allreduce(std::string_view name);

// One rule of an override: messages of [min_bytes, max_bytes) bytes use `algorithm`.
struct SizeRule {
  size_t min_bytes;
  size_t max_bytes;
  const AllreduceAlgorithm* algorithm;
};
// Parses "name" or "name:lo-hi;name:lo-hi" (sizes in bytes with optional k, m, g suffixes,
// powers of 1024, and "inf"). Throws InvalidArgument naming the bad part.
std::vector<SizeRule> parse_size_rules(std::string_view spec);

// The built-in choice, documented in docs/collectives.md.
const AllreduceAlgorithm& default_allreduce(size_t bytes, int members);

// The rules of RANKFLOW_ALLREDUCE (none when unset). Throws InvalidArgument for a bad value.
std::vector<SizeRule> overrides_from_environment();

// `requested` is an algorithm name or "auto"; "auto" takes the first override rule whose range
// holds `bytes`, then the built-in table.
const AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes, int members,
                                           const std::vector<SizeRule>& overrides);

}  // namespace rankflow::coll
