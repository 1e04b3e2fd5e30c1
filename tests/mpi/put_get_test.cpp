// Put and get correctness from 1 B to 64 MiB at unaligned offsets and sizes, through the team's
// best path (direct stores where mapped) and through UCX itself, plus the zeroed-window and
// direct-mapping guarantees.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "mpi_test_main.h"

namespace rankflow::test {
namespace {

constexpr size_t kMaxBytes = size_t{64} << 20;
constexpr size_t kSlack = 128;  // room for unaligned offsets and guard bytes
constexpr uint8_t kGuard = 0xEE;

enum class Path { kTeam, kUcx };

struct Case {
  size_t bytes;
  size_t offset;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{8}, size_t{61}, size_t{4096 + 5},
                       size_t{65536 + 3}, size_t{(1 << 20) + 7}}) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{7}, size_t{61}})
      out.push_back({bytes, offset});
  }
  out.push_back({kMaxBytes, 0});
  out.push_back({kMaxBytes, 5});
  return out;
}

class PutGetTest : public ::testing::TestWithParam<Path> {
 protected:
  static void SetUpTestSuite() {
    team_ = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"data", kMaxBytes + kSlack}},
                                   "put_get");
  }
  static void TearDownTestSuite() {
    team_->close();
    team_.reset();
  }
  static Team& team() { return *team_; }
  void put(int peer, size_t offset, const void* src, size_t bytes) {
    if (GetParam() == Path::kTeam) {
      team().put(peer, offset, src, bytes);
    } else {
      window().put(peer, offset, src, bytes);
    }
  }
  void get(int peer, size_t offset, void* dst, size_t bytes) {
    if (GetParam() == Path::kTeam) {
      team().get(peer, offset, dst, bytes);
    } else {
      window().get(peer, offset, dst, bytes);
    }
  }
  static transport::Window& window() { return *transport::TeamState::of(team())->window; }

  static inline std::optional<Team> team_;
};

TEST_P(PutGetTest, PutLandsExactlyAtOffsetFromOneByteTo64MiB) {
  Team& t = team();
  const int me = t.rank(), n = t.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t base = t.offset("data");
  std::vector<uint8_t> src(kMaxBytes);
  for (const Case& c : cases()) {
    std::memset(t.local_ptr(base), kGuard, c.bytes + kSlack);
    t.barrier();
    const uint64_t seed = c.bytes * 131 + c.offset * 7 + static_cast<uint64_t>(me);
    fill_pattern(src.data(), c.bytes, seed);
    put(right, base + c.offset + 1, src.data(), c.bytes);
    t.flush();
    t.barrier();
    const uint8_t* mine = reinterpret_cast<uint8_t*>(t.local_ptr(base));
    const uint64_t left_seed = c.bytes * 131 + c.offset * 7 + static_cast<uint64_t>(left);
    ASSERT_EQ(first_mismatch(mine + c.offset + 1, c.bytes, left_seed), -1)
        << c.bytes << " bytes at offset " << c.offset + 1 << " from rank " << left;
    ASSERT_EQ(mine[c.offset], kGuard) << "byte before the put was overwritten";
    ASSERT_EQ(mine[c.offset + 1 + c.bytes], kGuard) << "byte after the put was overwritten";
  }
  t.barrier();
}

TEST_P(PutGetTest, GetReadsExactlyFromOneByteTo64MiB) {
  Team& t = team();
  const int me = t.rank(), n = t.size();
  const int right = (me + 1) % n;
  const size_t base = t.offset("data");
  std::vector<uint8_t> dst(kMaxBytes + 2);
  for (const Case& c : cases()) {
    const uint64_t seed = c.bytes * 17 + c.offset + static_cast<uint64_t>(me) * 1000003;
    fill_pattern(t.local_ptr(base + c.offset), c.bytes, seed);
    t.barrier();
    dst[0] = kGuard;
    dst[c.bytes + 1] = kGuard;
    get(right, base + c.offset, dst.data() + 1, c.bytes);
    t.flush();
    const uint64_t right_seed = c.bytes * 17 + c.offset + static_cast<uint64_t>(right) * 1000003;
    ASSERT_EQ(first_mismatch(dst.data() + 1, c.bytes, right_seed), -1)
        << c.bytes << " bytes at offset " << c.offset << " from rank " << right;
    ASSERT_EQ(dst[0], kGuard);
    ASSERT_EQ(dst[c.bytes + 1], kGuard);
    t.barrier();
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, PutGetTest, ::testing::Values(Path::kTeam, Path::kUcx),
                         [](const auto& param_info) {
                           return param_info.param == Path::kTeam ? "TeamBestPath" : "UcxPutGet";
                         });

TEST(WindowTest, NewWindowIsZeroedOnEveryMember) {
  constexpr size_t kBytes = (1 << 20) + 3;
  auto window = transport::Window::create(shared_context(), MPI_COMM_WORLD, kBytes, "zeroed");
  const auto* local = reinterpret_cast<const uint8_t*>(window->local_base());
  for (size_t i = 0; i < kBytes; ++i)
    ASSERT_EQ(local[i], 0) << "byte " << i;
  std::vector<uint8_t> remote(kBytes, 0xFF);
  window->get((window->rank() + 1) % window->size(), 0, remote.data(), kBytes);
  window->flush();
  for (size_t i = 0; i < kBytes; ++i)
    ASSERT_EQ(remote[i], 0) << "peer byte " << i;
  window->close();
}

TEST(WindowTest, DirectMappingExactlyWhenSharedMemoryIsAvailable) {
  auto window = transport::Window::create(shared_context(), MPI_COMM_WORLD, 4096, "mapping");
  const int me = window->rank();
  for (int peer = 0; peer < window->size(); ++peer) {
    if (peer == me) continue;
    EXPECT_EQ(window->remote_ptr(peer, 0) != nullptr, expect_direct_mapping()) << "peer " << peer;
  }
  EXPECT_EQ(window->all_mapped(), expect_direct_mapping() || window->size() == 1);
  // A store through the mapped pointer is what the peer sees.
  const int right = (me + 1) % window->size();
  if (auto* remote = static_cast<uint64_t*>(window->remote_ptr(right, 64))) {
    *remote = 1000 + static_cast<uint64_t>(me);
  } else {
    const uint64_t value = 1000 + static_cast<uint64_t>(me);
    window->put(right, 64, &value, sizeof(value));
  }
  window->flush();
  const int left = (me + window->size() - 1) % window->size();
  window->wait(64, Compare::kEqual, 1000 + static_cast<uint64_t>(left), "mapping test", left,
               context().timeout());
  window->close();
}

}  // namespace
}  // namespace rankflow::test
