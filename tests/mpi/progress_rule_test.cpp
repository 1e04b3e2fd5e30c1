// The progress rule, tested as an HPC code uses rankflow: every collective call (every
// allreduce algorithm, every broadcast root, plain and symmetric buffers, counts from 1 to
// 70,000 elements) is followed at once by one of the program's own blocking MPI calls
// (MPI_Allreduce, MPI_Barrier, MPI_Bcast, a blocking MPI_Send/MPI_Recv between neighbours).
// Over UCX_TLS=tcp,self a peer's data moves only while its owner calls into UCX, so any
// collective that returns while a peer still needs this rank's progress hangs here.
//
// A rankflow timeout or a wrong result ends the whole job at once with MPI_Abort (the other
// ranks are blocked inside MPI and would never reach the next test).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

// Elements of int32 across every protocol boundary: streamed (<= 512 B), pushed (<= 4 KiB),
// staged or direct mesh, segmented twophase.
const std::vector<size_t> kCounts = {1, 5, 127, 1000, 4099, 65537, 70000};

enum class MpiCall { kAllreduce, kBarrier, kBcast, kSendRecv };
constexpr MpiCall kMpiCalls[] = {MpiCall::kAllreduce, MpiCall::kBarrier, MpiCall::kBcast,
                                 MpiCall::kSendRecv};

[[noreturn]] void abort_job(const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "[rank %d] progress rule broken: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

// The program's own blocking MPI call, checked: `token` is the same on every rank.
void own_mpi_call(MpiCall call, int token) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  switch (call) {
    case MpiCall::kAllreduce: {
      int sum = 0;
      MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (sum != token * size) abort_job("MPI_Allreduce gave " + std::to_string(sum));
      return;
    }
    case MpiCall::kBarrier: MPI_Barrier(MPI_COMM_WORLD); return;
    case MpiCall::kBcast: {
      int value = rank == 0 ? token : -1;
      MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (value != token) abort_job("MPI_Bcast gave " + std::to_string(value));
      return;
    }
    case MpiCall::kSendRecv: {
      if (size == 1) return;
      const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
      int got = -1;
      if (rank % 2 == 0) {
        MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
        MPI_Recv(&got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
      }
      if (got != token) abort_job("MPI_Recv gave " + std::to_string(got));
      return;
    }
  }
}

// Request::test() until it returns true; a request that never completes ends the job.
void test_until_done(Request& request, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!request.test()) {
    if (std::chrono::steady_clock::now() > deadline)
      abort_job(std::string(what) + ": Request::test() did not return true within 20 s");
  }
}

int32_t value(int rank, size_t i, int round) {
  return static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 131 + round * 17) % 1000);
}

class ProgressRule : public ::testing::TestWithParam<bool> {  // symmetric buffers?
 protected:
  void SetUp() override {
    comm_ = Communicator::from_mpi(MPI_COMM_WORLD);
    p_ = comm_.size();
    me_ = comm_.rank();
  }
  void TearDown() override {
    arena_ = SymmetricBuffer();
    comm_.close();
  }
  // Two buffers of `elements` int32 each: user memory, or one symmetric allocation.
  std::pair<int32_t*, int32_t*> buffers(size_t elements) {
    if (!GetParam()) {
      a_.assign(elements, 0);
      b_.assign(elements, 0);
      return {a_.data(), b_.data()};
    }
    const size_t bytes = 2 * elements * 4 + 64;
    if (arena_.bytes() < bytes) arena_ = comm_.alloc(bytes);
    auto* base = static_cast<int32_t*>(arena_.data());
    return {base, base + elements + 16};
  }
  // Runs `collective(round)` then one of the program's MPI calls, `rounds` times, cycling
  // through the MPI calls; `check(round)` returns an empty string when the result is right.
  template <typename Collective, typename Check>
  void interleave(const std::string& name, int rounds, Collective&& collective, Check&& check) {
    for (int round = 0; round < rounds; ++round) {
      try {
        collective(round);
      } catch (const Error& e) {
        abort_job(name + " round " + std::to_string(round) + ": " + e.what());
      }
      if (std::string wrong = check(round); !wrong.empty())
        abort_job(name + " round " + std::to_string(round) + ": " + wrong);
      own_mpi_call(kMpiCalls[round % 4], round + 1);
    }
  }

  Communicator comm_ = Communicator::from_mpi(MPI_COMM_SELF);
  SymmetricBuffer arena_;
  std::vector<int32_t> a_, b_;
  int p_ = 1, me_ = 0;
};

std::string first_wrong(const int32_t* got, size_t n, auto&& expected) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != expected(i)) {
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(expected(i));
    }
  }
  return {};
}

TEST_P(ProgressRule, AllreduceEveryAlgorithmThenMpi) {
  for (const char* algorithm :
       {"auto", "onephase", "twophase", "ring", "bidirectional_ring", "ibing"}) {
    for (size_t n : kCounts) {
      auto [a, b] = buffers(n);
      const std::string name =
          std::string("allreduce(") + algorithm + ") count " + std::to_string(n);
      interleave(
          name, 8,
          [&](int round) {
            for (size_t i = 0; i < n; ++i)
              a[i] = value(me_, i, round);
            comm_.allreduce(a, b, n, DType::kI32, ReduceOp::kSum, algorithm);
          },
          [&](int round) {
            return first_wrong(b, n, [&](size_t i) {
              int32_t sum = 0;
              for (int r = 0; r < p_; ++r)
                sum += value(r, i, round);
              return sum;
            });
          });
    }
  }
}

TEST_P(ProgressRule, BroadcastEveryRootThenMpi) {
  for (size_t n : kCounts) {
    auto [a, b] = buffers(n);
    (void)b;
    // Rounds rotate the root, so every member is root at least twice per count.
    interleave(
        "broadcast count " + std::to_string(n), 2 * p_ + 4,
        [&](int round) {
          const int root = round % p_;
          for (size_t i = 0; i < n; ++i)
            a[i] = me_ == root ? value(root, i, round) : -1;
          comm_.broadcast(a, n, DType::kI32, root);
        },
        [&](int round) {
          return first_wrong(a, n, [&](size_t i) { return value(round % p_, i, round); });
        });
  }
}

// The user's program from the bug report: small broadcasts far more often than the stream has
// slots, each followed by MPI_Allreduce.
TEST_P(ProgressRule, ManySmallBroadcastsEachFollowedByMpiAllreduce) {
  for (size_t n : {size_t{1}, size_t{5}, size_t{1000}}) {
    auto [a, b] = buffers(n);
    (void)b;
    interleave(
        "small broadcast count " + std::to_string(n), 200,
        [&](int round) {
          const int root = round % p_;
          for (size_t i = 0; i < n; ++i)
            a[i] = me_ == root ? value(root, i, round) : -1;
          comm_.broadcast(a, n, DType::kI32, root);
          double local = a[0], sum = 0;
          MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          if (sum != local * p_)
            abort_job("MPI_Allreduce after broadcast gave " + std::to_string(sum));
        },
        [&](int round) {
          return first_wrong(a, n, [&](size_t i) { return value(round % p_, i, round); });
        });
  }
}

TEST_P(ProgressRule, AllgatherReduceScatterAllToAllThenMpi) {
  for (size_t n : kCounts) {
    if (n * static_cast<size_t>(p_) > 200000) continue;  // keeps the np 5 runs short
    const size_t total = n * static_cast<size_t>(p_);
    auto [a, b] = buffers(total);
    const std::string suffix = " count " + std::to_string(n);
    interleave(
        "allgather" + suffix, 4,
        [&](int round) {
          for (size_t i = 0; i < n; ++i)
            a[i] = value(me_, i, round);
          comm_.allgather(a, b, n, DType::kI32);
        },
        [&](int round) {
          return first_wrong(b, total, [&](size_t i) { return value(int(i / n), i % n, round); });
        });
    interleave(
        "reduce_scatter" + suffix, 4,
        [&](int round) {
          for (size_t i = 0; i < total; ++i)
            a[i] = value(me_, i, round);
          comm_.reduce_scatter(a, b, n, DType::kI32, ReduceOp::kSum);
        },
        [&](int round) {
          return first_wrong(b, n, [&](size_t i) {
            int32_t sum = 0;
            for (int r = 0; r < p_; ++r)
              sum += value(r, me_ * n + i, round);
            return sum;
          });
        });
    interleave(
        "all_to_all" + suffix, 4,
        [&](int round) {
          for (size_t i = 0; i < total; ++i)
            a[i] = value(me_, i, round);
          comm_.all_to_all(a, b, n, DType::kI32);
        },
        [&](int round) {
          // Block q of my result is member q's block `me`.
          return first_wrong(b, total,
                             [&](size_t i) { return value(int(i / n), me_ * n + i % n, round); });
        });
  }
}

TEST_P(ProgressRule, BarrierThenMpi) {
  interleave(
      "barrier", 16, [&](int) { comm_.barrier(); }, [](int) { return std::string(); });
}

// Requests: a wait(), or a test() that returned true, leaves nothing a peer still needs.
TEST_P(ProgressRule, CompletedRequestsThenMpi) {
  for (size_t n : kCounts) {
    auto [a, b] = buffers(n);
    interleave(
        "ibroadcast + iallreduce count " + std::to_string(n), 2 * p_,
        [&](int round) {
          const int root = round % p_;
          for (size_t i = 0; i < n; ++i)
            a[i] = me_ == root ? value(root, i, round) : -1;
          Request r = comm_.ibroadcast(a, n, DType::kI32, root);
          if (round % 2 == 0) {
            r.wait();
          } else {
            test_until_done(r, "ibroadcast");
          }
          Request s = comm_.iallreduce(a, b, n, DType::kI32, ReduceOp::kMax);
          test_until_done(s, "iallreduce");
        },
        [&](int round) {
          if (auto wrong = first_wrong(a, n, [&](size_t i) { return value(round % p_, i, round); });
              !wrong.empty())
            return wrong;
          return first_wrong(b, n, [&](size_t i) { return value(round % p_, i, round); });
        });
  }
}

// Spins on done() only (which never advances a request) until `request` completes, then checks
// `n` elements of `got` against `expected`; a request that never completes ends the job.
template <typename Expected>
void await_background(const Request& request, const int32_t* got, size_t n, const char* what,
                      Expected&& expected) {
  const std::string name = std::string(what) + " count " + std::to_string(n);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!request.done()) {
    if (std::chrono::steady_clock::now() > deadline)
      abort_job(name + " never completed in the background");
  }
  if (std::string wrong = first_wrong(got, n, expected); !wrong.empty())
    abort_job(name + ": " + wrong);
}

// RANKFLOW_PROGRESS=thread: requests complete while the program sits in its own MPI calls and
// never calls test() or wait() (done() only reads the state). Rank 0 starts each request and
// goes straight into MPI_Barrier; the others wait() for theirs first, which needs rank 0's
// transport to serve them while rank 0 is inside MPI (over TCP only its progress thread can).
TEST_P(ProgressRule, ProgressThreadCompletesRequestsWhileTheProgramSitsInMpi) {
  const char* mode = std::getenv("RANKFLOW_PROGRESS");
  if (mode == nullptr || std::string(mode) != "thread") GTEST_SKIP() << "RANKFLOW_PROGRESS=thread";
  for (size_t n : kCounts) {
    auto [a, b] = buffers(n);
    for (int round = 0; round < 4; ++round) {
      for (size_t i = 0; i < n; ++i)
        a[i] = me_ == 0 ? value(0, i, round) : -1;
      Request bcast = comm_.ibroadcast(a, n, DType::kI32, 0);
      if (me_ != 0) bcast.wait();
      own_mpi_call(kMpiCalls[round % 4], round + 1);
      await_background(bcast, a, n, "ibroadcast", [&](size_t i) { return value(0, i, round); });
      Request sum = comm_.iallreduce(a, b, n, DType::kI32, ReduceOp::kSum);
      own_mpi_call(MpiCall::kBarrier, 0);
      await_background(sum, b, n, "iallreduce", [&](size_t i) { return p_ * value(0, i, round); });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Buffers, ProgressRule, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Symmetric" : "Plain";
                         });

// A request holds the registrations of its arrays, so the program may drop its handles while the
// request runs; with RANKFLOW_PROGRESS=thread the progress thread may then release the last
// reference while the program's next collectives look their buffers up among the registrations
// (the lookup must not read one being freed: the TSan job runs this as progress_thread.np2).
TEST(ProgressRuleRegistered, HandlesDroppedWhileTheirRequestRunsThenMoreCollectives) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const size_t n = size_t{1} << 16;
  for (int round = 0; round < 20; ++round) {
    std::vector<int32_t> send(n, me + round), recv(n, -1);
    Request request;
    {
      RegisteredBuffer rs = comm.register_buffer(send.data(), n * sizeof(int32_t));
      RegisteredBuffer rr = comm.register_buffer(recv.data(), n * sizeof(int32_t));
      request = comm.iallreduce(send.data(), recv.data(), n, DType::kI32, ReduceOp::kSum);
    }  // the handles go; the request holds the registrations
    int32_t one = 1, members = 0;
    for (int k = 0; k < 4; ++k) {  // each looks up its buffers; the first completes the request
      comm.allreduce(&one, &members, 1, DType::kI32, ReduceOp::kSum);
      ASSERT_EQ(members, p) << "round " << round;
    }
    request.wait();
    request = Request();
    const int32_t want = p * round + p * (p - 1) / 2;
    for (size_t i = 0; i < n; i += 127)
      ASSERT_EQ(recv[i], want) << "round " << round << " element " << i;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
