// Context::CallScope: the call names and limits a thread's MPI and UCX waits take. Scopes nest
// (names joined by ": ", an inner limit of 0 keeps the outer one and its setter), end in reverse
// order, also when an exception unwinds them, and belong to their thread.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "transport/context.h"

namespace rankflow::transport {
namespace {

using std::chrono::milliseconds;
using Scope = Context::CallScope;

TEST(CallScopeTest, NestedScopesJoinTheirNamesAndInheritTheLimit) {
  ASSERT_EQ(Scope::current(), nullptr);
  {
    const Scope call("allreduce(twophase)", milliseconds(300));
    {
      const Scope growth("growing the staging window to 8388608 bytes", {}, "ignored");
      ASSERT_EQ(Scope::current(), &growth);
      EXPECT_EQ(growth.call(), "allreduce(twophase): growing the staging window to 8388608 bytes");
      EXPECT_EQ(growth.limit(), milliseconds(300));
      EXPECT_STREQ(growth.setter(), "Communicator::set_timeout");
      {
        const Scope team("", milliseconds(50), "set_timeout");
        EXPECT_EQ(team.call(), growth.call());  // an empty name adds nothing
        EXPECT_EQ(team.limit(), milliseconds(50));
        EXPECT_STREQ(team.setter(), "set_timeout");
      }
      EXPECT_EQ(Scope::current(), &growth);
    }
    EXPECT_EQ(Scope::current(), &call);
    EXPECT_EQ(call.call(), "allreduce(twophase)");
  }
  EXPECT_EQ(Scope::current(), nullptr);
}

TEST(CallScopeTest, AnOuterScopeWithoutANameLeavesTheInnerNameAlone) {
  const Scope outer("", milliseconds(10));
  const Scope inner("Communicator::alloc", {});
  EXPECT_EQ(inner.call(), "Communicator::alloc");
  EXPECT_EQ(inner.limit(), milliseconds(10));
}

TEST(CallScopeTest, AnExceptionEndsTheScopesItUnwinds) {
  const Scope outer("split", milliseconds(300));
  try {
    const Scope inner("growing", {});
    throw std::runtime_error("timeout");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(Scope::current(), &outer);
}

TEST(CallScopeTest, AScopeBelongsToItsThread) {
  const Scope mine("allreduce", milliseconds(300));
  const Scope* seen = &mine;
  std::thread other([&] { seen = Scope::current(); });
  other.join();
  EXPECT_EQ(seen, nullptr);
  EXPECT_EQ(Scope::current(), &mine);
}

}  // namespace
}  // namespace rankflow::transport
