// Ordering: data put before a signal (or before fence + atomic) is visible to the peer that sees
// the signal. A stream of blocks with credits checks it thousands of times per path.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mpi_test_main.h"
#include "transport/progress.h"

namespace rankflow::test {
namespace {

constexpr size_t kBlock = 4096 + 8;
constexpr int kSlots = 2;
constexpr uint32_t kDataSignal = 0;
constexpr uint32_t kCreditSignal = 1;
constexpr int kMessages = 2000;

// Each rank streams kMessages blocks to its right neighbour through kSlots slots; the receiver
// returns a credit per consumed block. Every block must be complete when its signal arrives.
void stream_blocks(Team& t, bool explicit_ucx_path) {
  transport::Window& window = *transport::TeamState::of(t)->window;
  const int me = t.rank(), n = t.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t slots = t.offset("slots");
  const size_t signal_offset = transport::TeamState::of(t)->layout.signal_slot(kDataSignal);
  std::vector<std::vector<uint8_t>> sent(kSlots, std::vector<uint8_t>(kBlock));
  int received = 0;
  bool intact = true;
  // Consumes every block whose signal has arrived, in order, returning one credit each.
  auto drain = [&] {
    while (intact && t.signal_value(kDataSignal) > static_cast<uint64_t>(received)) {
      ++received;
      const auto* data =
          reinterpret_cast<uint8_t*>(t.local_ptr(slots + (received % kSlots) * kBlock));
      intact = first_mismatch(data, kBlock, static_cast<uint64_t>(received) * 64 + left) == -1;
      t.signal(left, kCreditSignal);
    }
  };
  auto wait_while_draining = [&](auto&& done, const char* what) {
    transport::wait_until(
        [&] {
          drain();
          return !intact || done();
        },
        [&] { t.progress(); }, t.timeout(), [&] { return std::string("ordering test: ") + what; });
  };
  for (int i = 1; i <= kMessages && intact; ++i) {
    // A free slot at the receiver (credits are monotonic), then block i and its signal.
    wait_while_draining(
        [&] { return t.signal_value(kCreditSignal) + kSlots >= static_cast<uint64_t>(i); },
        "waiting for a credit");
    std::vector<uint8_t>& block = sent[i % kSlots];
    fill_pattern(block.data(), kBlock, static_cast<uint64_t>(i) * 64 + me);
    const size_t offset = slots + (i % kSlots) * kBlock;
    if (explicit_ucx_path) {
      window.put(right, offset, block.data(), kBlock);
      window.fence();
      window.atomic_add<uint64_t>(right, signal_offset, 1);
    } else {
      t.put(right, offset, block.data(), kBlock);
      t.signal(right, kDataSignal);
    }
    drain();
  }
  wait_while_draining([&] { return received == kMessages; }, "waiting for the last blocks");
  ASSERT_TRUE(intact) << "block " << received << " from rank " << left
                      << " was incomplete when its signal arrived";
  t.flush();
  t.barrier();
}

TEST(OrderingTest, DataIsVisibleBeforeItsSignal) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"slots", kSlots * kBlock}},
                                  "ordering");
  stream_blocks(t, /*explicit_ucx_path=*/false);
  t.close();
}

TEST(OrderingTest, UcxPutFenceAtomicKeepsOrder) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"slots", kSlots * kBlock}},
                                  "fence");
  stream_blocks(t, /*explicit_ucx_path=*/true);
  t.close();
}

}  // namespace
}  // namespace rankflow::test
