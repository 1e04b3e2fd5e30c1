// Bad input to team.h (issue 12): one table, run on every rank (bad_input_library.h), over
// teams from transport::create_team as library mode and domains build them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bad_input_library.h"
#include "rankflow/error.h"
#include "rankflow/team.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;
using E = ErrorCode;

TEST(BadInput, TeamH) {
  const int me = context().world_rank(), n = context().world_size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const auto make = [] {
    Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"b", 256}}, "bad-input");
    t.set_timeout(kShort);
    return t;
  };
  size_t end = 0, b = 0;
  uint32_t slots = 0;
  {
    Team probe = make();
    end = probe.window_bytes();
    b = probe.offset("b");
    slots = probe.signal_slots();
    probe.close();
  }
  const auto at = [](size_t v) { return "offset " + std::to_string(v); };
  const std::string where = "rank " + std::to_string(me) + " (member " + std::to_string(me) +
                            " of window 'bad-input'), peer ";
  const std::string peers = "is not a member; valid peers are 0.." + std::to_string(n - 1);
  const std::string size = "exceeds the peer's window size " + std::to_string(end);
  const std::string no_slot = "signal slot " + std::to_string(slots) +
                              " does not exist; this team has slots 0.." +
                              std::to_string(slots - 1);
  const std::string no_buffer = "team has no buffer named 'missing'; buffers: b";
  static uint8_t src[64], dst[64];
  using T = RankCase<Team>;
  const std::vector<T> table = {
      {"a Team without a state",
       [](Team&) { Team(nullptr); },
       E::kInvalidArgument,
       {"Team needs a state"}},
      // Named buffers.
      {"offset of a missing buffer",
       [](Team& t) { t.offset("missing"); },
       E::kInvalidArgument,
       {no_buffer}},
      {"bytes of a missing buffer",
       [](Team& t) { t.bytes("missing"); },
       E::kInvalidArgument,
       {no_buffer}},
      {"local of a missing buffer",
       [](Team& t) { t.local("missing"); },
       E::kInvalidArgument,
       {no_buffer}},
      {"local_as of a missing buffer",
       [](Team& t) { t.local_as<float>("missing"); },
       E::kInvalidArgument,
       {no_buffer}},
      {"local_ptr past the window",
       [&](Team& t) { t.local_ptr(end + 1); },
       E::kOutOfBounds,
       {"local_ptr: " + where + std::to_string(me), at(end + 1) + " + length 0", size}},
      // Peers and bounds of one-sided access.
      {"remote_ptr of a non-member",
       [&](Team& t) { t.remote_ptr(n, 0); },
       E::kInvalidArgument,
       {"remote_ptr: " + where + std::to_string(n), peers}},
      {"remote_ptr past the window",
       [&](Team& t) { t.remote_ptr(right, end + 1); },
       E::kOutOfBounds,
       {"remote_ptr: " + where + std::to_string(right), at(end + 1), size}},
      {"put to peer -1",
       [&](Team& t) { t.put(-1, b, src, 1); },
       E::kInvalidArgument,
       {"put: " + where + "-1", peers}},
      {"put past the window",
       [&](Team& t) { t.put(right, end - 3, src, 8); },
       E::kOutOfBounds,
       {"put: " + where + std::to_string(right), at(end - 3) + " + length 8", size}},
      {"put at an offset that wraps around",
       [&](Team& t) { t.put(right, SIZE_MAX - 2, src, 8); },
       E::kOutOfBounds,
       {"put: ", at(SIZE_MAX - 2) + " + length 8", size}},
      {"get from a non-member",
       [&](Team& t) { t.get(n, b, dst, 1); },
       E::kInvalidArgument,
       {"get: " + where + std::to_string(n), peers}},
      {"get past the window",
       [&](Team& t) { t.get(right, end, dst, 1); },
       E::kOutOfBounds,
       {"get: ", at(end) + " + length 1", size}},
      {"flush of a non-member",
       [&](Team& t) { t.flush(n); },
       E::kInvalidArgument,
       {"flush: " + where + std::to_string(n), peers}},
      // Atomics: in bounds, naturally aligned, on members.
      {"atomic_add misaligned",
       [&](Team& t) { t.atomic_add(right, b + 4, 1); },
       E::kInvalidArgument,
       {"atomic add: " + at(b + 4) + " is not aligned to the 64-bit word"}},
      {"atomic_add past the window",
       [&](Team& t) { t.atomic_add(right, end - 4, 1); },
       E::kOutOfBounds,
       {"atomic add: ", at(end - 4) + " + length 8", size}},
      {"fetch_add misaligned",
       [&](Team& t) { t.fetch_add(right, b + 1, 1); },
       E::kInvalidArgument,
       {at(b + 1) + " is not aligned to the 64-bit word size"}},
      {"compare_swap misaligned",
       [&](Team& t) { t.compare_swap(right, b + 4, 0, 1); },
       E::kInvalidArgument,
       {"compare_swap: " + at(b + 4) + " is not aligned to the 64-bit"}},
      {"atomic_add32 misaligned",
       [&](Team& t) { t.atomic_add32(right, b + 2, 1); },
       E::kInvalidArgument,
       {at(b + 2) + " is not aligned to the 32-bit word size"}},
      {"fetch_add32 past the window",
       [&](Team& t) { t.fetch_add32(right, end, 1); },
       E::kOutOfBounds,
       {at(end) + " + length 4", size}},
      {"compare_swap32 on a non-member",
       [&](Team& t) { t.compare_swap32(n, b, 0, 1); },
       E::kInvalidArgument,
       {"compare_swap: " + where + std::to_string(n), peers}},
      // Signals.
      {"signal to a slot that does not exist",
       [&](Team& t) { t.signal(right, slots); },
       E::kInvalidArgument,
       {"signal: " + no_slot}},
      {"signal to a non-member",
       [&](Team& t) { t.signal(n, 0); },
       E::kInvalidArgument,
       {"signal: " + where + std::to_string(n), peers}},
      {"wait_signal on a slot that does not exist",
       [&](Team& t) { t.wait_signal(slots, 1); },
       E::kInvalidArgument,
       {"wait_signal: " + no_slot}},
      {"wait_signal names the caller's operation",
       [&](Team& t) { t.wait_signal(slots + 5, 1, left, "my_exchange"); },
       E::kInvalidArgument,
       {"my_exchange: signal slot " + std::to_string(slots + 5) + " does not exist"}},
      {"signal_value of a slot that does not exist",
       [&](Team& t) { t.signal_value(slots); },
       E::kInvalidArgument,
       {"signal_value: " + no_slot}},
      {"signal_word of a slot that does not exist",
       [&](Team& t) { t.signal_word(UINT32_MAX); },
       E::kInvalidArgument,
       {"signal_word: signal slot 4294967295 does not exist"}},
      // Waits: an aligned word of this window; then a timeout that says what was awaited.
      {"wait on a misaligned word",
       [&](Team& t) { t.wait(b + 4, Compare::kEqual, 1); },
       E::kInvalidArgument,
       {"wait: " + where + std::to_string(me), at(b + 4) + " is not aligned"}},
      {"wait past the window",
       [&](Team& t) { t.wait(end, Compare::kEqual, 1); },
       E::kOutOfBounds,
       {"wait: ", at(end) + " + length 8", size}},
      {"set_timeout(0)",
       [](Team& t) { t.set_timeout(0s); },
       E::kInvalidArgument,
       {"Team::set_timeout: timeout must be positive"}},
      {"set_timeout of a negative time",
       [](Team& t) { t.set_timeout(-5ms); },
       E::kInvalidArgument,
       {"Team::set_timeout: timeout must be positive"}},
      {"wait_signal that no peer satisfies",
       [&](Team& t) { t.wait_signal(3, 1, left); },
       E::kTimeout,
       {"wait_signal: rank " + std::to_string(me), "waited 0.5 s for peer " + std::to_string(left),
        "expected >= 1, observed 0"}},
      {"wait_signal's Timeout names the caller's operation",
       [&](Team& t) { t.wait_signal(0, 2, -1, "my_exchange"); },
       E::kTimeout,
       {"my_exchange: rank " + std::to_string(me), "for its peers", "expected >= 2"}},
      {"wait for a word that never equals the value",
       [&](Team& t) { t.wait(b, Compare::kEqual, 7, right); },
       E::kTimeout,
       {"wait: rank " + std::to_string(me), "peer " + std::to_string(right),
        at(b) + " expected == 7, observed 0"}},
      {"wait_until with its own limit",
       [](Team& t) {
         t.wait_until([] { return false; }, [] { return std::string("the flag never rose"); },
                      200ms);
       },
       E::kTimeout,
       {"the flag never rose"}},
      {"wait_until with the team's limit",
       [](Team& t) {
         t.wait_until([] { return false; }, [] { return std::string("nothing came"); });
       },
       E::kTimeout,
       {"nothing came"}},
      {"barrier on rank 0 alone",
       [](Team& t) { t.rank() == 0 ? t.barrier() : void(); },
       E::kTimeout,
       {"barrier: rank 0", "waited 0.5 s for peer " + std::to_string(n - 1)},
       0},
      // After close().
      {"put after close",
       [&](Team& t) { t.put(right, b, src, 1); },
       E::kInvalidState,
       {"put on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"get after close",
       [&](Team& t) { t.get(right, b, dst, 1); },
       E::kInvalidState,
       {"get on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"flush(peer) after close",
       [&](Team& t) { t.flush(right); },
       E::kInvalidState,
       {"flush on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"fence after close",
       [](Team& t) { t.fence(); },
       E::kInvalidState,
       {"fence on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"atomic_add after close",
       [&](Team& t) { t.atomic_add(right, b, 1); },
       E::kInvalidState,
       {"atomic add on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"signal after close",
       [&](Team& t) { t.signal(right, 0); },
       E::kInvalidState,
       {"signal on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"wait_signal after close",
       [](Team& t) { t.wait_signal(0, 1); },
       E::kInvalidState,
       {"wait_signal on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"wait after close",
       [&](Team& t) { t.wait(b, Compare::kEqual, 0); },
       E::kInvalidState,
       {"wait on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"barrier after close",
       [](Team& t) { t.barrier(); },
       E::kInvalidState,
       {"barrier on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"remote_ptr after close",
       [&](Team& t) { t.remote_ptr(right, 0); },
       E::kInvalidState,
       {"remote_ptr on closed window 'bad-input'"},
       kEveryRank,
       true},
      {"local_ptr after close",
       [](Team& t) { t.local_ptr(0); },
       E::kInvalidState,
       {"local_ptr on closed window 'bad-input'"},
       kEveryRank,
       true},
  };
  run_rank_table<Team>(table, make, [](Team& t) { t.close(); });
}

}  // namespace
}  // namespace rankflow::test
