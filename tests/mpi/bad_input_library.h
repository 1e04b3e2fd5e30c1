// Bad input to library mode (issue 12), shared by the tables of communicator.h
// (bad_input_communicator_test.cpp) and team.h (bad_input_team_test.cpp): every case runs on
// every rank over a fresh Communicator or Team (timeout 0.5 s), which is closed after it. A case
// names the rank that must raise the error (or every rank), and the other ranks must not raise
// any; a member that never arrives is a case whose other members do nothing.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "../common/bad_input.h"
#include "mpi_test_main.h"
#include "rankflow/error.h"

namespace rankflow::test {

inline constexpr int kEveryRank = -1;
inline constexpr std::chrono::milliseconds kShort{500};  // the object's timeout in every case

// Every rank: an MPI barrier that keeps the transport progressing while it waits.
inline void world_barrier(const std::string& what) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, what);
}

template <typename Object>
struct RankCase {
  std::string name;
  std::function<void(Object&)> call;  // on every rank
  ErrorCode code;
  std::vector<std::string> substrings;
  int thrower = kEveryRank;  // the rank that must raise it; the others must not raise anything
  bool closed = false;       // the object is closed (collectively) before the call
};

// Runs every case on a fresh object from `make`, closed afterwards with `close`.
template <typename Object, typename Make, typename Close>
void run_rank_table(const std::vector<RankCase<Object>>& table, Make make, Close close) {
  const int me = context().world_rank();
  for (const RankCase<Object>& c : table) {
    Object object = make();
    if (c.closed) close(object);
    const Outcome o = outcome_of([&] { c.call(object); }, c.code);
    if (c.thrower == kEveryRank || c.thrower == me) {
      check_outcome(c.name + " (rank " + std::to_string(me) + ")", o, c.code, c.substrings);
    } else {
      EXPECT_FALSE(o.threw) << c.name << ": rank " << me << " raised " << o.what;
    }
    if (!c.closed) close(object);
  }
  world_barrier("end of a bad-input table");
  if (me == 0) std::printf("%zu cases\n", table.size());
}

}  // namespace rankflow::test
