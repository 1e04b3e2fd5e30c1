// AckedStream as a piece of its own (collectives/stream.h), over a plain Team with its own region
// and acknowledgement kind, as a channel or a host/task queue would use it: more messages than
// slots from one sender to every other member with the slowest receiver throttling the sender
// (contents checked, never overwritten before they are read); every member streaming to every
// other at once; a receiver that stops consuming ends the sender's send in a Timeout naming the
// operation, the rank and the peer; bad shapes and regions are InvalidArgument. The first two
// run on whole-line slots and on slots that share a cache line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collectives/stream.h"
#include "mpi_test_main.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

using coll::AckedStream;
using coll::SignalAwait;
using coll::SignalKind;
using coll::StreamShape;

const SignalKind kTestAck("test.stream_ack");  // the tests' own kind, as a channel would have

Team stream_team(const StreamShape& shape, const char* name) {
  const int members = context().world_size();
  return transport::create_team(shared_context(), MPI_COMM_WORLD,
                                {{"stream", shape.region_bytes(members), 64}}, name,
                                SignalKind::count() * static_cast<uint32_t>(members));
}

size_t message_bytes(const StreamShape& shape, uint64_t message, int to) {
  return 1 + (message * 7 + static_cast<uint64_t>(to)) % shape.payload_bytes;
}
uint64_t message_seed(uint64_t message, int from, int to) {
  return message * 131 + static_cast<uint64_t>(from) * 17 + static_cast<uint64_t>(to);
}

void send_message(AckedStream& stream, uint64_t message, int to) {
  std::vector<std::byte> data(message_bytes(stream.shape(), message, to));
  fill_pattern(data.data(), data.size(), message_seed(message, context().world_rank(), to));
  stream.send(to, data.data(), data.size());
}

// Takes message `message` from `from` (waiting for it), checks it, and consumes it; with
// `dawdle` it first sleeps, so a sender that overran the stream would have overwritten it.
void receive_message(Team& team, AckedStream& stream, uint64_t message, int from,
                     std::chrono::microseconds dawdle = {}) {
  ASSERT_EQ(stream.next_message(from), message);
  const SignalAwait arrival = stream.await_message(from, message);
  team.wait_until(
      [&] { return arrival.satisfied(); },
      [&] { return "message " + std::to_string(message) + " from " + std::to_string(from); });
  if (dawdle.count() > 0) std::this_thread::sleep_for(dawdle);
  const int me = context().world_rank();
  const uint64_t flag = std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(arrival.word))
                            .load(std::memory_order_acquire);
  EXPECT_EQ(flag, message) << "message " << message << " from " << from
                           << " was overwritten before it was consumed";
  const size_t bytes = message_bytes(stream.shape(), message, me);
  EXPECT_EQ(
      first_mismatch(stream.payload(from, message, bytes), bytes, message_seed(message, from, me)),
      -1)
      << "message " << message << " from " << from;
  stream.consumed(from, message);
}

// Each test below runs on whole-line slots and on slots that share cache lines (16 and 32
// bytes: a sender writes the next slot of a line while the receiver reads the one before).
class AckedStreamShapes : public ::testing::TestWithParam<StreamShape> {};

INSTANTIATE_TEST_SUITE_P(Slots, AckedStreamShapes,
                         ::testing::Values(StreamShape{8, 100, 4}, StreamShape{8, 8, 4},
                                           StreamShape{16, 24, 8}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.stride()) + "ByteSlots";
                         });

TEST_P(AckedStreamShapes, SlowestReceiverThrottlesTheSenderAndEveryMessageArrivesIntact) {
  const StreamShape shape = GetParam();
  Team team = stream_team(shape, "stream.throttle");
  AckedStream stream(team, team.offset("stream"), shape, kTestAck);
  stream.set_operation("stream_test.throttle");
  const int me = team.rank(), n = team.size();
  const uint64_t messages = 120;
  const auto dawdle = std::chrono::microseconds(500);  // the last member is the slow one
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  if (me == 0) {
    for (uint64_t m = 1; m <= messages; ++m)
      for (int p = 1; p < n; ++p)
        send_message(stream, m, p);
    // Sending message k needed the slow member to have consumed k - slots, each after a dawdle.
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_GE(elapsed, (messages - shape.slots) * dawdle / 2) << "the sender was not throttled";
  } else {
    for (uint64_t m = 1; m <= messages; ++m)
      receive_message(team, stream, m, 0, me == n - 1 ? dawdle : std::chrono::microseconds{});
  }
  team.barrier();
  team.close();
}

TEST_P(AckedStreamShapes, EveryMemberStreamsToEveryOtherAtOnce) {
  const StreamShape shape = GetParam();
  Team team = stream_team(shape, "stream.all");
  AckedStream stream(team, team.offset("stream"), shape, kTestAck);
  const int me = team.rank(), n = team.size();
  for (uint64_t m = 1; m <= 50; ++m) {
    for (int d = 1; d < n; ++d)
      send_message(stream, m, (me + d) % n);
    for (int d = 1; d < n; ++d)
      receive_message(team, stream, m, (me - d + n) % n);
  }
  team.barrier();
  team.close();
}

TEST(AckedStreamTest, ReceiverThatStopsConsumingEndsTheSendInTimeoutNamingRankOperationAndPeer) {
  const StreamShape shape{4, 64, 2};
  Team team = stream_team(shape, "stream.chaos");
  team.set_timeout(std::chrono::seconds(1));
  AckedStream stream(team, team.offset("stream"), shape, kTestAck);
  stream.set_operation("stream_test.chaos");
  const int me = team.rank(), n = team.size();
  // Member 1 consumes `ack_every` messages and stops; any other member consumes everything sent.
  const uint64_t reachable = shape.ack_every + shape.slots;  // sends that need no further credit
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    uint64_t sent = 0;
    const auto start = std::chrono::steady_clock::now();
    try {
      for (uint64_t m = 1; m <= reachable + 1; ++m) {
        for (int p = n - 1; p >= 1; --p)  // member 1 last: the healthy members get message m
          send_message(stream, m, p);
        sent = m;
      }
      ADD_FAILURE() << "the send outran a receiver that stopped consuming";
    } catch (const Timeout& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("stream_test.chaos"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("rank 0 waited for peer 1"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("streamed message " +
                                                 std::to_string(reachable + 1 - shape.slots)));
    }
    EXPECT_EQ(sent, reachable);
    // Within the team's limit: it waited about that long, not until the test's own limit.
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_GE(elapsed, std::chrono::milliseconds(900));
    EXPECT_LT(elapsed, std::chrono::seconds(6));
  } else if (me == 1) {
    for (uint64_t m = 1; m <= shape.ack_every; ++m)
      receive_message(team, stream, m, 0);
    team.flush();  // the acknowledgement has landed; now this member stops consuming
  } else {
    for (uint64_t m = 1; m <= reachable + 1; ++m)
      receive_message(team, stream, m, 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  team.close();  // the members are out of step: the stream is discarded
}

TEST(AckedStreamTest, BadShapesAndRegionsAreInvalidArgument) {
  const StreamShape shape{4, 64, 2};
  Team team = stream_team(shape, "stream.shapes");
  const size_t region = team.offset("stream");
  EXPECT_THROW(AckedStream(team, region, StreamShape{6, 64, 2}, kTestAck), InvalidArgument);
  EXPECT_THROW(AckedStream(team, region, StreamShape{4, 64, 8}, kTestAck), InvalidArgument);
  EXPECT_THROW(AckedStream(team, region, StreamShape{4, 0, 2}, kTestAck), InvalidArgument);
  const size_t past_the_end = team.window_bytes() - shape.region_bytes(team.size()) + 64;
  EXPECT_THROW(AckedStream(team, past_the_end, shape, kTestAck), InvalidArgument)
      << "a region that runs past the end of the window";
  AckedStream absent(team, SIZE_MAX, shape, kTestAck);
  EXPECT_FALSE(absent.present());
  AckedStream stream(team, region, shape, kTestAck);
  EXPECT_TRUE(stream.present());
  std::vector<std::byte> too_big(65);
  EXPECT_THROW(stream.send(team.size() > 1 ? 1 : 0, too_big.data(), too_big.size()),
               InvalidArgument);
  team.barrier();
  team.close();
}

}  // namespace
}  // namespace rankflow::test
