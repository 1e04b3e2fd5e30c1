// Bad accesses: out-of-bounds puts, gets and atomics throw OutOfBounds naming peer, offset,
// length and window size, and leave the target untouched; bad peers and misaligned atomics are
// InvalidArgument; a wait that never completes ends in a Timeout that says what it waited for;
// window segments are bounds-checked per peer and end at detach.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_main.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

using ::testing::HasSubstr;

template <typename Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error thrown)";
}

TEST(ErrorsTest, OutOfBoundsAccessThrowsAndWritesNothing) {
  constexpr size_t kBytes = 1000;
  auto window = transport::Window::create(shared_context(), MPI_COMM_WORLD, kBytes, "bounds");
  const int me = window->rank(), n = window->size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::memset(window->local_base(), 0x5A, kBytes);
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, "test barrier");

  uint8_t src[64] = {};
  EXPECT_THROW(window->put(right, kBytes - 3, src, 8), OutOfBounds);
  EXPECT_THROW(window->put(right, kBytes + 1, src, 0), OutOfBounds);
  EXPECT_THROW(window->put(right, SIZE_MAX - 2, src, 8), OutOfBounds);  // no wrap-around
  EXPECT_THROW(window->get(right, 999, src, 2), OutOfBounds);
  EXPECT_THROW(window->atomic_add<uint64_t>(right, kBytes, 1), OutOfBounds);
  EXPECT_THROW(window->fetch_add<uint32_t>(right, 1000, 1), OutOfBounds);
  EXPECT_THROW(window->compare_swap<uint64_t>(right, 1000 - 4, 0, 1), OutOfBounds);
  EXPECT_THROW(window->remote_ptr(right, kBytes + 1), OutOfBounds);
  EXPECT_NO_THROW(window->put(right, kBytes, src, 0));  // empty range at the end is fine

  const std::string what = message_of([&] { window->put(right, 990, src, 64); });
  EXPECT_THAT(what, HasSubstr("peer " + std::to_string(right)));
  EXPECT_THAT(what, HasSubstr("offset 990"));
  EXPECT_THAT(what, HasSubstr("length 64"));
  EXPECT_THAT(what, HasSubstr("window size 1000"));
  EXPECT_THAT(what, HasSubstr("window 'bounds'"));

  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"b", 100}}, "team-bounds");
  const size_t end = team.window_bytes();
  EXPECT_THROW(team.put(right, end - 1, src, 2), OutOfBounds);
  EXPECT_THROW(team.get(right, end, src, 1), OutOfBounds);
  EXPECT_THROW(team.atomic_add(right, end - 4, 1), OutOfBounds);
  team.barrier();

  window->flush();
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, "test barrier");
  const auto* mine = reinterpret_cast<const uint8_t*>(window->local_base());
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(mine[i], 0x5A) << "byte " << i << " changed by a rejected access from rank " << left;
  }
  team.close();
  window->close();
}

// Segments: the members' own memory attached to a window (sizes differ per member) takes puts
// and gets at its window offset, in bounds of each peer's own segment; an offset in a segment
// never attached, or detached, is OutOfBounds saying so, and detach of anything but a segment is
// InvalidArgument.
TEST(ErrorsTest, SegmentAccessesAreBoundsCheckedPerPeerAndEndAtDetach) {
  auto window = transport::Window::create(shared_context(), MPI_COMM_WORLD, 64, "segments");
  const int me = window->rank(), n = window->size();
  const int right = (me + 1) % n;
  const size_t right_bytes = 1000 + 8 * static_cast<size_t>(right);
  std::vector<uint64_t> mine((1000 + 8 * static_cast<size_t>(me)) / 8, 7);
  const size_t at = window->attach(mine.data(), mine.size() * 8);
  EXPECT_EQ(at, transport::Window::kSegmentStride);
  EXPECT_EQ(window->local_ptr(at), reinterpret_cast<std::byte*>(mine.data()));
  EXPECT_EQ(mine.front(), 7u);  // attaching keeps the contents

  const uint64_t word = 100 + static_cast<uint64_t>(me);
  window->put(right, at + right_bytes - 8, &word, 8);  // the last word of the right's segment
  window->flush();
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, "test barrier");
  EXPECT_EQ(mine.back(), 100u + static_cast<uint64_t>((me + n - 1) % n));
  uint64_t got = 0;
  window->get(right, at, &got, 8);
  window->flush();
  EXPECT_EQ(got, 7u);

  const std::string past = message_of([&] { window->put(right, at + right_bytes - 4, &word, 8); });
  EXPECT_THAT(past, HasSubstr("segment 1 size " + std::to_string(right_bytes)));
  const std::string none =
      message_of([&] { window->get(right, 2 * transport::Window::kSegmentStride, &got, 8); });
  EXPECT_THAT(none, HasSubstr("segment 2 is not attached"));
  EXPECT_THROW(window->detach(at + 8), InvalidArgument);
  EXPECT_THROW(window->detach(0), InvalidArgument);

  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, "test barrier");
  window->detach(at);
  EXPECT_EQ(mine.front(), 7u);  // detaching keeps the contents
  EXPECT_THAT(message_of([&] { window->put(right, at, &word, 8); }),
              HasSubstr("segment 1 is not attached (it was detached)"));
  EXPECT_THROW(window->local_ptr(at), OutOfBounds);
  EXPECT_THROW(window->detach(at), InvalidArgument);
  window->close();
}

TEST(ErrorsTest, BadPeerAndMisalignedAtomicAreInvalidArguments) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"b", 256}}, "args");
  const size_t b = team.offset("b");
  uint8_t byte = 0;
  EXPECT_THROW(team.put(team.size(), b, &byte, 1), InvalidArgument);
  EXPECT_THROW(team.put(-1, b, &byte, 1), InvalidArgument);
  EXPECT_THROW(team.remote_ptr(team.size(), 0), InvalidArgument);
  EXPECT_THROW(team.atomic_add(0, b + 4, 1), InvalidArgument);
  EXPECT_THROW(team.fetch_add32(0, b + 2, 1), InvalidArgument);
  EXPECT_THROW(team.signal(0, team.signal_slots()), InvalidArgument);
  EXPECT_THROW(team.offset("missing"), InvalidArgument);
  EXPECT_THAT(message_of([&] { team.put(team.size() + 3, b, &byte, 1); }),
              HasSubstr("valid peers are 0.." + std::to_string(team.size() - 1)));
  team.barrier();
  team.close();
}

TEST(ErrorsTest, WaitTimeoutNamesRankOperationPeerAndValues) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {}, "timeouts");
  team.set_timeout(std::chrono::milliseconds(200));
  const int left = (team.rank() + team.size() - 1) % team.size();
  const auto start = std::chrono::steady_clock::now();
  const std::string what = message_of([&] { team.wait_signal(5, 1, left); });
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(what, HasSubstr("timeout"));
  EXPECT_THAT(what, HasSubstr("wait_signal"));
  EXPECT_THAT(what, HasSubstr("rank " + std::to_string(context().world_rank())));
  EXPECT_THAT(what, HasSubstr("peer " + std::to_string(left)));
  EXPECT_THAT(what, HasSubstr("expected >= 1"));
  EXPECT_THAT(what, HasSubstr("observed 0"));
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  EXPECT_THROW(team.wait(team.offset("missing"), Compare::kEqual, 1), InvalidArgument);
  team.set_timeout(context().timeout());
  team.barrier();
  team.close();
}

// A flush to a peer that does not progress UCX (over TCP it acknowledges only while it does)
// takes the team's set_timeout, not RANKFLOW_TIMEOUT_S (30 s under CTest): member 0 puts into
// member 1 and flushes while member 1 sleeps 3 s. Before the team's limit reached the window's
// UCX waits, the flush simply waited for member 1 and no error came. On shared memory every
// peer is mapped, the put is a store and there is nothing to flush: skipped there.
TEST(ErrorsTest, FlushToAPeerThatDoesNotProgressTakesTheTeamsLimit) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"data", 4096}}, "flushes");
  if (team.mapped_everywhere()) {  // agreed on every member; under UCX_TLS=tcp,self none maps
    team.barrier();
    team.close();
    GTEST_SKIP() << "member 1 is mapped: a put is a store, and a flush has nothing to wait for";
  }
  team.set_timeout(std::chrono::milliseconds(300));
  team.barrier();
  std::string what;
  // Member 1 says it is about to sleep (it may still be progressing in the barrier for the
  // others, and would acknowledge the put), then makes no UCX call for 3 s.
  constexpr uint32_t kAsleep = 6;
  if (team.rank() == 0) {
    team.wait_signal(kAsleep, 1, 1);
    std::vector<std::byte> data(4096, std::byte{7});
    team.put(1, team.offset("data"), data.data(), data.size());
    what = message_of([&] { team.flush(); });
  } else if (team.rank() == 1) {
    team.signal(0, kAsleep, 1);
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  team.set_timeout(context().timeout());
  if (team.rank() == 0) team.fence();  // the put lands before the barrier's signal
  team.barrier();                      // member 1 progresses again
  if (team.rank() == 0) {
    EXPECT_THAT(what, HasSubstr("timeout"));
    EXPECT_THAT(what, HasSubstr("rank 0"));
    EXPECT_THAT(what, HasSubstr("flush"));
    EXPECT_THAT(what, HasSubstr("peer 1"));
    EXPECT_THAT(what, HasSubstr("within 0.3 s"));
    EXPECT_THAT(what, HasSubstr("set_timeout sets the limit"));
  }
  if (team.rank() == 1) {
    const auto* landed = static_cast<const std::byte*>(team.local_ptr(team.offset("data")));
    EXPECT_EQ(landed[0], std::byte{7});
    EXPECT_EQ(landed[4095], std::byte{7});
  }
  team.barrier();
  team.close();
}

TEST(ErrorsTest, UseAfterCloseIsInvalidState) {
  auto window = transport::Window::create(shared_context(), MPI_COMM_WORLD, 64, "closed");
  window->close();
  uint64_t value = 0;
  EXPECT_THROW(window->put(0, 0, &value, 8), InvalidState);
  EXPECT_THROW(window->fence(), InvalidState);
}

}  // namespace
}  // namespace rankflow::test
