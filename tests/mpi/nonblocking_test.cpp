// Non-blocking collectives: every one completes through test() or wait(), a caller may write its
// plain send buffers as soon as the call returns, starting another collective completes the
// one before, a wait that times out does not cancel, and a call returns before its late peers
// arrive.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "api/communicator_internal.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

// Every sched_yield of this process (std::this_thread::yield calls it) counted on its thread,
// then made: the test below counts Request::test's yields.
namespace {
thread_local uint64_t yields_made = 0;
}  // namespace
extern "C" int sched_yield() noexcept {
  ++yields_made;
  return static_cast<int>(syscall(SYS_sched_yield));
}

namespace rankflow::test {
namespace {

TEST(NonBlockingTest, EveryCollectiveCompletesThroughTestOrWait) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  // Blocks of many chunks; from 17 ranks (the many-ranks smoke runs on two cores, where this
  // test checks progress, not size) blocks of 10007, so an exchange stays near 2.5 MiB a rank.
  const size_t n = p <= 16 ? 100003 : 10007;
  for (bool symmetric : {false, true}) {
    SymmetricBuffer arena = symmetric ? comm.alloc(2 * n * p * 4 + 64) : SymmetricBuffer();
    std::vector<int32_t> user(2 * n * p + 16);
    int32_t* a = symmetric ? static_cast<int32_t*>(arena.data()) : user.data();
    int32_t* b = a + n * p + 8;
    for (size_t i = 0; i < n; ++i)
      a[i] = static_cast<int32_t>(i + me);
    Request r = comm.iallreduce(a, b, n, DType::kI32, ReduceOp::kSum);
    // A poll loop that never gives up the core, as a caller that computes between tests may
    // write: with more ranks than cores (the np3-np64 runs), Request::test itself yields now
    // and then, or the rank bound to the same core could wait for a scheduler time slice at
    // every step (this test once took 76 s at 3 ranks on 2 cores in CI on the AMD Zen 5).
    while (!r.test()) {
      // the caller is free to compute here
    }
    EXPECT_TRUE(r.done());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(b[i], static_cast<int32_t>(p * i + p * (p - 1) / 2)) << "element " << i;
    }
    for (size_t i = 0; i < n; ++i)
      a[i] = static_cast<int32_t>(me * 1000 + i % 1000);
    comm.iallgather(a, b, n, DType::kI32).wait();
    for (int q = 0; q < p; ++q)
      ASSERT_EQ(b[q * n + 5], q * 1000 + 5);
    comm.ibroadcast(a, n, DType::kI32, p - 1).wait();
    ASSERT_EQ(a[7], (p - 1) * 1000 + 7);
    for (size_t i = 0; i < n * p; ++i)
      a[i] = static_cast<int32_t>(me);
    comm.iall_to_all(a, b, n, DType::kI32).wait();
    for (int q = 0; q < p; ++q)
      ASSERT_EQ(b[q * n], q);
    comm.ireduce_scatter(a, b, n, DType::kI32, ReduceOp::kSum).wait();
    ASSERT_EQ(b[0], p * (p - 1) / 2);
    comm.ibarrier().wait();
  }
  comm.close();
}

// A plain buffer is the caller's again as soon as a non-blocking call returns: the root of an
// ibroadcast may overwrite it at once (blocking roots stage large messages chunk by chunk while
// peers fetch; non-blocking ones must have staged it all).
TEST(NonBlockingTest, RootMayReusePlainBufferRightAfterIbroadcast) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const size_t n = size_t{1} << 20;  // 4 MiB: many chunks
  std::vector<int32_t> a(n);
  for (int root = 0; root < comm.size(); ++root) {
    for (size_t i = 0; i < n; ++i)
      a[i] = comm.rank() == root ? static_cast<int32_t>(i * 3 + root) : -1;
    Request r = comm.ibroadcast(a.data(), n, DType::kI32, root);
    if (comm.rank() == root) std::fill(a.begin(), a.end(), -7);
    r.wait();
    if (comm.rank() == root) continue;
    for (size_t i = 0; i < n; i += 4099)
      ASSERT_EQ(a[i], static_cast<int32_t>(i * 3 + root)) << "root " << root << " element " << i;
    ASSERT_EQ(a[n - 1], static_cast<int32_t>((n - 1) * 3 + root));
  }
  comm.close();
}

// The caller may write a plain send buffer as soon as a non-blocking call returns (Request):
// every collective, at sizes that push (16 B, 4 KiB, 24 KiB), stage (96 KiB, 1.5 MiB) and run
// in segments (3 MiB of allreduce), overwrites its input right after the call and must still
// get the result of what it passed. With RANKFLOW_PROGRESS=thread the call may already be
// running when the input changes.
TEST(NonBlockingTest, SendMayBeWrittenRightAfterEachCall) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const int32_t ranks = p * (p + 1) / 2;
  auto value = [](int rank, size_t i) {
    return static_cast<int32_t>((i * 5 + 3) % 1000) * (rank + 1);
  };
  for (size_t bytes : {size_t{16}, size_t{4096}, size_t{24} << 10, size_t{96} << 10,
                       size_t{1536} << 10, size_t{3} << 20}) {
    const size_t n = bytes / 4;
    std::vector<int32_t> send(n * p), recv(n * p);
    auto fill = [&](size_t count) {
      for (size_t i = 0; i < count; ++i)
        send[i] = value(me, i);
    };
    auto clobber = [&] { std::fill(send.begin(), send.end(), -99); };
    auto check = [&](const char* what, size_t count, auto&& want) {
      size_t wrong = 0, first = SIZE_MAX;
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != want(i) && wrong++ == 0) first = i;
      }
      EXPECT_EQ(wrong, 0u) << what << " of " << bytes << " B: first wrong element " << first;
    };
    fill(n);
    Request r = comm.iallreduce(send.data(), recv.data(), n, DType::kI32, ReduceOp::kSum);
    clobber();
    r.wait();
    check("iallreduce", n, [&](size_t i) { return value(0, i) * ranks; });
    if (bytes > (size_t{1536} << 10)) continue;  // the rest once past the staged sizes
    fill(n * p);
    r = comm.ireduce_scatter(send.data(), recv.data(), n, DType::kI32, ReduceOp::kSum);
    clobber();
    r.wait();
    check("ireduce_scatter", n, [&](size_t i) { return value(0, me * n + i) * ranks; });
    fill(n);
    r = comm.iallgather(send.data(), recv.data(), n, DType::kI32);
    clobber();
    r.wait();
    check("iallgather", n * p, [&](size_t i) { return value(static_cast<int>(i / n), i % n); });
    fill(n * p);
    r = comm.iall_to_all(send.data(), recv.data(), n, DType::kI32);
    clobber();
    r.wait();
    check("iall_to_all", n * p,
          [&](size_t i) { return value(static_cast<int>(i / n), me * n + i % n); });
    for (int root = 0; root < p; ++root) {  // the root's buffer is its send
      std::vector<int32_t>& buffer = me == root ? send : recv;
      for (size_t i = 0; i < n; ++i)
        buffer[i] = me == root ? value(root, i) : -1;
      r = comm.ibroadcast(buffer.data(), n, DType::kI32, root);
      if (me == root) clobber();
      r.wait();
      if (me != root) check("ibroadcast", n, [&](size_t i) { return value(root, i); });
    }
  }
  comm.close();
}

TEST(NonBlockingTest, StartingAnotherCollectiveCompletesThePreviousOne) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  int64_t x = comm.rank() + 1, sum = 0, y = 10, max = 0;
  Request first = comm.iallreduce(&x, &sum, 1, DType::kI64, ReduceOp::kSum);
  comm.allreduce(&y, &max, 1, DType::kI64, ReduceOp::kMax);  // completes `first` before starting
  EXPECT_TRUE(first.done());
  EXPECT_EQ(sum, static_cast<int64_t>(comm.size()) * (comm.size() + 1) / 2);
  EXPECT_EQ(max, 10);
  comm.close();
}

TEST(NonBlockingTest, WaitTimeoutDoesNotCancel) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  float x = 1, sum = 0;
  if (comm.rank() == 0) {
    Request r = comm.iallreduce(&x, &sum, 1, DType::kF32, ReduceOp::kSum);
    EXPECT_THROW(r.wait(std::chrono::milliseconds(50)), Timeout);  // the others are late
    EXPECT_FALSE(r.done());
    r.wait();  // still in flight: completes once they arrive
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    comm.allreduce(&x, &sum, 1, DType::kF32, ReduceOp::kSum);
  }
  EXPECT_EQ(sum, static_cast<float>(comm.size()));
  comm.close();
}

// Ends the job at once: in PushedCallsReturnBeforeTheirPeersCall the peers wait in MPI_Recv for
// member 0 and would never get past it after a failure.
[[noreturn]] void abort_job(int rank, const std::string& what) {
  std::fprintf(stderr, "[rank %d] pushed non-blocking call: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

// One small pushed collective (16 B blocks), non-blocking, and element `k` of block `r` of its
// result on member `me` of `p` (every member's send block r holds 100 * member + r * 4 + k).
struct PushedCall {
  const char* name;
  Request (*start)(Communicator&, const int32_t*, int32_t*);
  int32_t (*expected)(int p, int me, int r, int k);
  int blocks;  // result blocks per member: 1, or p (-1)
};
constexpr int kPushedCount = 4;
int32_t members_sum(int p) {
  return 100 * p * (p - 1) / 2;
}
const PushedCall kPushedCalls[] = {
    {"iallreduce",
     [](Communicator& c, const int32_t* s, int32_t* r) {
       return c.iallreduce(s, r, kPushedCount, DType::kI32, ReduceOp::kSum);
     },
     [](int p, int, int, int k) { return members_sum(p) + p * k; }, 1},
    {"ireduce_scatter",
     [](Communicator& c, const int32_t* s, int32_t* r) {
       return c.ireduce_scatter(s, r, kPushedCount, DType::kI32, ReduceOp::kSum);
     },
     [](int p, int me, int, int k) { return members_sum(p) + p * (me * kPushedCount + k); }, 1},
    {"iallgather",
     [](Communicator& c, const int32_t* s, int32_t* r) {
       return c.iallgather(s, r, kPushedCount, DType::kI32);
     },
     [](int, int, int r, int k) { return 100 * r + k; }, -1},
    {"iall_to_all",
     [](Communicator& c, const int32_t* s, int32_t* r) {
       return c.iall_to_all(s, r, kPushedCount, DType::kI32);
     },
     [](int, int me, int r, int k) { return 100 * r + me * kPushedCount + k; }, -1},
};

// Blocking calls of the pushed collectives wait for their peers in the call itself
// (CollContext::call_blocks); their non-blocking variants must still return at once. Member 0
// starts each small pushed collective before its peers may call it: they wait for its MPI
// message, sent once its call has returned (a call that waited for them would end in the
// communicator's Timeout, and the job with it). A blocking pushed allreduce comes first each
// round, so a call that left the context marked blocking is caught too. Nothing is staged (the
// pushed paths ran), and every member checks every element.
TEST(NonBlockingTest, PushedCallsReturnBeforeTheirPeersCall) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  comm.set_timeout(std::chrono::seconds(20));
  const int p = comm.size(), me = comm.rank();
  std::vector<int32_t> send(kPushedCount * static_cast<size_t>(p)), recv(send.size());
  for (size_t k = 0; k < send.size(); ++k)
    send[k] = 100 * me + static_cast<int32_t>(k);
  const size_t staged_before = api::staged_collectives(comm);
  for (const PushedCall& call : kPushedCalls) {
    int32_t one = 1, members = 0;
    comm.allreduce(&one, &members, 1, DType::kI32, ReduceOp::kSum);  // blocking, pushed
    ASSERT_EQ(members, p) << call.name;
    std::fill(recv.begin(), recv.end(), -1);
    int go = 0;
    if (me != 0) MPI_Recv(&go, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    Request request;
    try {
      request = call.start(comm, send.data(), recv.data());
    } catch (const Error& e) {
      abort_job(me, std::string(call.name) + " waited in the call for its peers: " + e.what());
    }
    for (int r = 1; r < p && me == 0; ++r)
      MPI_Send(&go, 1, MPI_INT, r, 77, MPI_COMM_WORLD);
    try {
      request.wait();
    } catch (const Error& e) {
      abort_job(me, std::string(call.name) + ": " + e.what());
    }
    const int blocks = call.blocks > 0 ? call.blocks : p;
    for (int r = 0; r < blocks; ++r) {
      for (int k = 0; k < kPushedCount; ++k) {
        EXPECT_EQ(recv[static_cast<size_t>(r * kPushedCount + k)], call.expected(p, me, r, k))
            << call.name << " block " << r << " element " << k;
      }
    }
  }
  EXPECT_EQ(api::staged_collectives(comm), staged_before) << "a call did not take its pushed path";
  comm.close();
}

// A caller's loop of Request::test that never gives up the core: where a member is bound to the
// same core, every kTestsBetweenYields-th unfinished test yields it (so that member runs), and
// elsewhere none does. The last member joins 20 ms late, so the others poll many times; each
// member counts the yields its own loop made (collectives.shared_core_yields binds two members
// to one core and says so with RANKFLOW_TEST_SHARED_CORE=1; the other runs bind them apart or,
// from 3 ranks on 2 cores, some together).
TEST(NonBlockingTest, PollingYieldsTheCoreOnlyWhereAMemberSharesIt) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const bool shared = api::shares_a_core(comm);
  if (const char* bound = std::getenv("RANKFLOW_TEST_SHARED_CORE"); bound && *bound == '1') {
    EXPECT_TRUE(shared) << "member " << me << " was bound to a core it shares";
  }
  uint64_t polls = 0;
  for (int round = 0; round < 3; ++round) {
    int32_t one = me + round, sum = 0;
    if (me == p - 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Request r = comm.iallreduce(&one, &sum, 1, DType::kI32, ReduceOp::kSum);
    uint64_t unfinished = 0;
    const uint64_t yields_before = yields_made;
    while (!r.test())
      ++unfinished;
    const uint64_t yields = yields_made - yields_before;
    polls += unfinished;
    ASSERT_EQ(sum, p * (p - 1) / 2 + p * round);
    if (shared) {
      EXPECT_EQ(yields, unfinished / api::kTestsBetweenYields)
          << "member " << me << " shares its core: " << unfinished << " unfinished tests";
    } else {
      EXPECT_EQ(yields, 0u) << "member " << me << " has a core of its own";
    }
  }
  // The members that did not come late polled for 20 ms a round: enough tests for yields.
  if (me != p - 1) {
    EXPECT_GE(polls, 3 * api::kTestsBetweenYields) << "member " << me;
  }
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
