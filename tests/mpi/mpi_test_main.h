// Support for tests that run as real ranks under mpirun: the shared transport Context, a team
// over MPI_COMM_WORLD, and deterministic byte patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rankflow/team.h"
#include "transport/context.h"
#include "transport/team_state.h"

namespace rankflow::test {

transport::Context& context();
std::shared_ptr<transport::Context> shared_context();

// True when UCX may map peers' memory (no UCX_TLS override that excludes shared memory).
bool expect_direct_mapping();

// The byte at `index` of a pattern identified by `seed`; different seeds give different bytes.
inline uint8_t pattern_byte(uint64_t seed, size_t index) {
  uint64_t x = (index + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x);
}
void fill_pattern(void* data, size_t bytes, uint64_t seed);
// Index of the first byte that differs from the pattern, or -1.
long long first_mismatch(const void* data, size_t bytes, uint64_t seed);

}  // namespace rankflow::test
