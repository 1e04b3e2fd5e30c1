// Collective building blocks without MPI: partitions, reduction kernels and f16/bf16
// conversions, and the algorithm tables with their RANKFLOW_<COLLECTIVE> overrides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "collectives/cache_hints.h"
#include "collectives/coll_context.h"
#include "collectives/process_memory.h"
#include "collectives/reduce.h"
#include "collectives/registry.h"
#include "collectives/stage_copy.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

// this_process() keeps the process id it read, and a forked child reads its own: the id the
// cross-memory protocols publish must name the process that publishes it.
TEST(ProcessMemoryTest, ThisProcessIsThisProcessAlsoAfterFork) {
  EXPECT_EQ(this_process(), static_cast<int64_t>(getpid()));
  EXPECT_EQ(this_process(), static_cast<int64_t>(getpid()));  // the kept copy
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(this_process() == static_cast<int64_t>(getpid()) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child published its parent's process id";
}

TEST(PartitionTest, CoversEveryElementOnceForAnyCount) {
  for (size_t count : {0, 1, 2, 3, 7, 64, 1000003}) {
    for (size_t parts : {1, 2, 3, 5, 8, 64}) {
      size_t next = 0;
      for (size_t i = 0; i < parts; ++i) {
        const Segment s = partition(count, parts, i);
        EXPECT_EQ(s.begin, next) << count << "/" << parts << " part " << i;
        EXPECT_LE(s.count, count / parts + 1);
        next += s.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(ReduceTest, EveryOpOnEveryDtype) {
  const std::vector<double> a{1, -2, 3, 8}, b{4, 5, -6, 0.5};
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    const bool integer = dtype == DType::kI32 || dtype == DType::kI64;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      const Reducer& r = reducer(dtype, op);
      EXPECT_EQ(r.elem_size, dtype_size(dtype));
      std::vector<std::byte> x(4 * r.elem_size), y(4 * r.elem_size), acc(4 * r.acc_size);
      auto put = [&](std::vector<std::byte>& v, size_t i, double d) {
        switch (dtype) {
          case DType::kF32: reinterpret_cast<float*>(v.data())[i] = static_cast<float>(d); break;
          case DType::kF64: reinterpret_cast<double*>(v.data())[i] = d; break;
          case DType::kF16:
            reinterpret_cast<uint16_t*>(v.data())[i] = float_to_half(static_cast<float>(d));
            break;
          case DType::kBF16:
            reinterpret_cast<uint16_t*>(v.data())[i] = float_to_bf16(static_cast<float>(d));
            break;
          case DType::kI32:
            reinterpret_cast<int32_t*>(v.data())[i] = static_cast<int32_t>(d);
            break;
          case DType::kI64:
            reinterpret_cast<int64_t*>(v.data())[i] = static_cast<int64_t>(d);
            break;
          default: FAIL() << "not a collective dtype";
        }
      };
      auto get = [&](const std::vector<std::byte>& v, size_t i) -> double {
        switch (dtype) {
          case DType::kF32: return reinterpret_cast<const float*>(v.data())[i];
          case DType::kF64: return reinterpret_cast<const double*>(v.data())[i];
          case DType::kF16: return half_to_float(reinterpret_cast<const uint16_t*>(v.data())[i]);
          case DType::kBF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(v.data())[i]);
          case DType::kI32: return reinterpret_cast<const int32_t*>(v.data())[i];
          case DType::kI64:
            return static_cast<double>(reinterpret_cast<const int64_t*>(v.data())[i]);
          default: break;
        }
        return 0;
      };
      for (size_t i = 0; i < 4; ++i) {
        put(x, i, integer ? std::trunc(a[i]) : a[i]);
        put(y, i, integer ? std::trunc(b[i]) : b[i]);
      }
      std::vector<std::byte> combined = x;
      r.combine(combined.data(), y.data(), 4);
      r.load(acc.data(), x.data(), 4);
      r.accumulate(acc.data(), y.data(), 4);
      std::vector<std::byte> stored(4 * r.elem_size);
      r.store(stored.data(), acc.data(), 4);
      for (size_t i = 0; i < 4; ++i) {
        const double u = get(x, i), v = get(y, i);
        const double want = op == ReduceOp::kSum    ? u + v
                            : op == ReduceOp::kProd ? u * v
                            : op == ReduceOp::kMin  ? std::min(u, v)
                                                    : std::max(u, v);
        EXPECT_EQ(get(combined, i), want) << to_string(dtype) << " " << to_string(op) << " " << i;
        EXPECT_EQ(get(stored, i), want) << to_string(dtype) << " " << to_string(op) << " " << i;
      }
    }
  }
}

TEST(ReduceTest, HalfPrecisionAccumulatesInF32) {
  // 2048 + 1 + 1 in f16 pairwise rounds to 2048 each time; accumulated in f32 it is 2050.
  const Reducer& r = reducer(DType::kF16, ReduceOp::kSum);
  EXPECT_EQ(r.acc_size, 4u);
  const uint16_t big = float_to_half(2048.0f), one = float_to_half(1.0f);
  float acc = 0;
  r.load(&acc, &big, 1);
  r.accumulate(&acc, &one, 1);
  r.accumulate(&acc, &one, 1);
  uint16_t out = 0;
  r.store(&out, &acc, 1);
  EXPECT_EQ(half_to_float(out), 2050.0f);
}

TEST(ReduceTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);       // halfway: to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.01171875f)), 1.015625f);  // halfway: to even (up)
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST(RegistryTest, NamesAndDefaults) {
  EXPECT_EQ(find_allreduce("ring").name, "ring");
  EXPECT_THROW(find_allreduce("tree"), InvalidArgument);
  EXPECT_EQ(default_allreduce(4, 2).name, "onephase");
  EXPECT_EQ(default_allreduce(4096, 3).name, "onephase");  // the largest pushed message
  EXPECT_EQ(default_allreduce(1024, 2).name, "onephase");
  // Two members, symmetric buffers (sweep_choices.txt): twophase in place from 2 KiB; on plain
  // buffers onephase, pushed, up to 32 KiB, then twophase.
  EXPECT_EQ(default_allreduce(2048, 2).name, "twophase");
  EXPECT_EQ(default_allreduce(4096, 2).name, "twophase");
  EXPECT_EQ(default_allreduce(4100, 2).name, "twophase");
  EXPECT_EQ(default_allreduce(64 << 10, 2).name, "twophase");
  const auto& table = allreduce_table();
  EXPECT_EQ(table.builtin(4100, 2, true, Buffers::kPlain).name, "onephase");
  EXPECT_EQ(table.builtin(32 << 10, 2, true, Buffers::kPlain).name, "onephase");
  EXPECT_EQ(table.builtin((32 << 10) + 4, 2, true, Buffers::kPlain).name, "twophase");
  EXPECT_EQ(default_allreduce(size_t{64} << 20, 4).name, "twophase");
}

TEST(RegistryTest, OverrideRulesParse) {
  const auto& table = allreduce_table();
  auto rules = table.parse("onephase:0-64k; twophase:64k-inf");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 65536u);
  EXPECT_EQ(rules[1].algorithm->name, "twophase");
  EXPECT_EQ(rules[1].max_bytes, SIZE_MAX);
  EXPECT_EQ(table.parse("ibing")[0].algorithm->name, "ibing");
  EXPECT_THROW(table.parse("ring:10-5"), InvalidArgument);
  EXPECT_THROW(table.parse("ring:1x-5"), InvalidArgument);
  EXPECT_THROW(table.parse("ring:0"), InvalidArgument);
  EXPECT_THROW(table.parse("tree:0-1k"), InvalidArgument);
}

TEST(RegistryTest, EnvironmentOverrideChoosesBySize) {
  setenv("RANKFLOW_ALLREDUCE", "ring:0-1k;ibing:1k-1m", 1);
  const auto rules = overrides_from_environment().allreduce;
  EXPECT_EQ(select_allreduce("auto", 100, 4, rules).name, "ring");
  EXPECT_EQ(select_allreduce("auto", 4096, 4, rules).name, "ibing");
  EXPECT_EQ(select_allreduce("auto", size_t{8} << 20, 4, rules).name, "twophase");  // table
  EXPECT_EQ(select_allreduce("onephase", 100, 4, rules).name, "onephase");          // explicit wins
  // "mpi" by name: Open MPI's collective where the caller allows it, else the table's choice.
  EXPECT_EQ(select_allreduce("mpi", 100, 4, rules, Buffers::kPlain, true).name, "mpi");
  EXPECT_EQ(select_allreduce("mpi", 100, 4, rules, Buffers::kPlain, false).name, "ring");
  setenv("RANKFLOW_ALLREDUCE", "fastest", 1);
  try {
    overrides_from_environment();
    FAIL() << "an unknown name must be an error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("valid algorithms are onephase, twophase"));
  }
  unsetenv("RANKFLOW_ALLREDUCE");
  EXPECT_TRUE(overrides_from_environment().allreduce.empty());
}

// The choices communicator.cpp made with if-chains before the tables, restated: the tables must
// make exactly these.
std::string_view old_exchange_choice(size_t block, int members) {
  return block > 0 && block <= CollContext::kInboxBytes && members > 1 ? "pushed" : "mesh";
}
std::string_view old_broadcast_choice(size_t bytes, int members) {
  if (bytes <= CollContext::kStreamBytes) return "streamed";
  if (members == 2 && bytes <= CollContext::kInboxBytes) return "pushed";
  return "direct";
}
// Since 2026-12-03 the inbox's slots hold 32 KiB on teams of up to four members (4 KiB above).
bool onephase_pushes_on(size_t bytes, int members) {
  return members > 1 && bytes <= PushInbox::payload_bytes(members);
}

const std::vector<size_t> kSizes = {0,    1,    8,    511,   512,   513,   4095,
                                    4096, 4097, 8192, 32768, 32769, 65536, 1 << 20};
const std::vector<int> kMembers = {1, 2, 3, 4, 5, 64};

// The choice by `preferred` alone: where no measured range (tests/unit/sweep_choices_test.cpp
// holds those to the latest sweep) decides.
template <typename Args>
std::string_view unmeasured(const AlgorithmTable<Args>& table, size_t bytes, int members) {
  for (const auto& a : table.algorithms()) {
    if (a.preferred.holds(bytes, members, true)) return a.name;
  }
  return {};
}

TEST(TablesTest, DefaultsMatchTheEarlierChoices) {
  for (size_t bytes : kSizes) {
    for (int members : kMembers) {
      SCOPED_TRACE(std::to_string(bytes) + " bytes on " + std::to_string(members));
      const std::string_view exchange = old_exchange_choice(bytes, members);
      EXPECT_EQ(unmeasured(allgather_table(), bytes, members), exchange);
      EXPECT_EQ(unmeasured(reduce_scatter_table(), bytes, members), exchange);
      EXPECT_EQ(unmeasured(all_to_all_table(), bytes, members), exchange);
      EXPECT_EQ(unmeasured(broadcast_table(), bytes, members),
                old_broadcast_choice(bytes, members));
      EXPECT_EQ(unmeasured(allreduce_table(), bytes, members),
                bytes <= CollContext::kInboxBytes ? "onephase" : "twophase");
      if (members != 2) {  // these two tables' measured ranges are for two members only
        EXPECT_EQ(allgather_table().builtin(bytes, members, true).name, exchange);
        EXPECT_EQ(broadcast_table().builtin(bytes, members, true, Buffers::kPlain).name,
                  old_broadcast_choice(bytes, members));
      }
      EXPECT_EQ(find_allreduce("onephase").pushes.holds(bytes, members, true),
                onephase_pushes_on(bytes, members));
      // With no overrides, select() is the built-in choice.
      EXPECT_EQ(&broadcast_table().select(bytes, members, true, {}),
                &broadcast_table().builtin(bytes, members, true));
    }
  }
}

// Where Open MPI measured fastest on plain buffers but may not run (a non-blocking call), a
// message that fits a push is pushed; larger ones take the entry preferred for them.
TEST(TablesTest, WithoutOpenMpiItsRangesPushWhereTheMessageFits) {
  for (size_t bytes : {size_t{16} << 10, size_t{32} << 10}) {
    SCOPED_TRACE(bytes);
    EXPECT_TRUE(broadcast_table().builtin(bytes, 2, true, Buffers::kPlain, true).open_mpi);
    EXPECT_EQ(broadcast_table().builtin(bytes, 2, true, Buffers::kPlain, false).name, "pushed");
  }
  // From 16 KiB blocks up the cross-memory entries, which on one host copy straight between the
  // processes, are chosen whether or not Open MPI's transfer may run (Open MPI's is never the
  // built-in choice for them since the sweep of 2026-12-04). (`probed` only where a machine
  // profile chooses it.)
  for (size_t bytes :
       {size_t{16} << 10, size_t{1} << 20, size_t{8} << 20, size_t{16} << 20, size_t{64} << 20}) {
    SCOPED_TRACE(bytes);
    for (bool open_mpi : {true, false}) {
      EXPECT_EQ(allgather_table().builtin(bytes, 2, true, Buffers::kPlain, open_mpi).name,
                "cross_memory");
      EXPECT_EQ(all_to_all_table().builtin(bytes, 2, true, Buffers::kPlain, open_mpi).name,
                "cross_memory");
    }
  }
}

// Every entry is preferred and pushes only where it serves; each table has an entry preferred
// for every message; the pushing entries push wherever they are chosen.
template <typename Args>
void check_table(const AlgorithmTable<Args>& table) {
  SCOPED_TRACE(table.collective());
  for (size_t bytes : kSizes) {
    for (int members : kMembers) {
      bool preferred = false;
      for (const auto& a : table.algorithms()) {
        SCOPED_TRACE(std::string(a.name) + " " + std::to_string(bytes) + " bytes on " +
                     std::to_string(members));
        if (a.preferred.holds(bytes, members, true)) {
          preferred = true;
          EXPECT_TRUE(a.serves.holds(bytes, members, true));
        }
        if (a.pushes.holds(bytes, members, true) ||
            a.measured_symmetric.holds(bytes, members, true) ||
            a.measured_plain.holds(bytes, members, true)) {
          EXPECT_TRUE(a.serves.holds(bytes, members, true));
        }
        EXPECT_FALSE(a.pushes.holds(bytes, members, false));  // pushes need the inbox
        if (a.streams_staged.holds(bytes, members, true)) {   // only what it stages itself
          EXPECT_TRUE(a.serves.holds(bytes, members, true));
          EXPECT_FALSE(a.pushes.holds(bytes, members, true)) << "a pushed path stages nothing";
        }
        EXPECT_EQ(a.run == nullptr, a.open_mpi) << "only Open MPI's entries have no run";
        EXPECT_NE(a.label, nullptr);
        EXPECT_EQ(std::string(a.label),
                  std::string(table.collective()) + "(" + std::string(a.name) + ")");
      }
      EXPECT_TRUE(preferred);
      // Without leave, no choice runs Open MPI's collective (non-blocking calls, the runtime).
      for (Buffers kind : {Buffers::kSymmetric, Buffers::kPlain}) {
        EXPECT_FALSE(table.builtin(bytes, members, true, kind).open_mpi);
        EXPECT_FALSE(table.choose(bytes, members, true, table.parse("mpi"), kind).open_mpi);
      }
      EXPECT_TRUE(
          table.choose(bytes, members, true, table.parse("mpi"), Buffers::kPlain, true).open_mpi);
    }
  }
}

TEST(TablesTest, EntriesAreConsistent) {
  check_table(allreduce_table());
  check_table(allgather_table());
  check_table(reduce_scatter_table());
  check_table(broadcast_table());
  check_table(all_to_all_table());
}

// The staging copy is exact whichever way it copies: every size around the streaming threshold
// and the 64-byte steps, every alignment of source and destination.
TEST(StageCopyTest, CopiesEveryByteWhateverTheWayAndAlignment) {
  std::vector<std::byte> src(70000 + 64), dst(70000 + 64);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  struct Way {
    StageCopy how;
    bool entry_streams;
  };
  for (const Way way : {Way{StageCopy::kMemcpy, true}, Way{StageCopy::kStream, false},
                        Way{StageCopy::kTable, true}, Way{StageCopy::kTable, false}}) {
    set_stage_copy(way.how);
    const bool entry_streams = way.entry_streams;
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{16383}, size_t{16384},
                         size_t{16385}, size_t{16447}, size_t{70000}}) {
      for (size_t dst_offset : {0, 1, 8, 15, 33}) {
        for (size_t src_offset : {0, 3}) {
          std::fill(dst.begin(), dst.end(), std::byte{0xee});
          stage_copy(dst.data() + dst_offset, src.data() + src_offset, bytes, entry_streams);
          ASSERT_EQ(std::memcmp(dst.data() + dst_offset, src.data() + src_offset, bytes), 0)
              << bytes << " bytes, dst +" << dst_offset << ", src +" << src_offset;
          EXPECT_EQ(dst[dst_offset + bytes], std::byte{0xee}) << "wrote past the end";
          if (dst_offset > 0) {
            EXPECT_EQ(dst[dst_offset - 1], std::byte{0xee}) << "wrote before the start";
          }
        }
      }
    }
  }
  set_stage_copy(StageCopy::kTable);
}

// stream_copy (the exchanges' own blocks) likewise, beside whatever the staging mode says.
TEST(StageCopyTest, StreamCopyCopiesEveryByteWhateverTheAlignment) {
  std::vector<std::byte> src(70000 + 64), dst(70000 + 64);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  set_stage_copy(StageCopy::kMemcpy);  // ignored by stream_copy
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{16383}, size_t{16384}, size_t{16447}, size_t{70000}}) {
    for (size_t dst_offset : {0, 1, 8, 15, 33}) {
      std::fill(dst.begin(), dst.end(), std::byte{0xee});
      stream_copy(dst.data() + dst_offset, src.data() + 3, bytes);
      ASSERT_EQ(std::memcmp(dst.data() + dst_offset, src.data() + 3, bytes), 0)
          << bytes << " bytes, dst +" << dst_offset;
      EXPECT_EQ(dst[dst_offset + bytes], std::byte{0xee}) << "wrote past the end";
      if (dst_offset > 0) {
        EXPECT_EQ(dst[dst_offset - 1], std::byte{0xee}) << "wrote before the start";
      }
    }
  }
  set_stage_copy(StageCopy::kTable);
}

TEST(TablesTest, EveryOverrideVariableParses) {
  setenv("RANKFLOW_ALLGATHER", "mesh", 1);
  setenv("RANKFLOW_REDUCE_SCATTER", "mesh:0-1k; pushed:1k-inf", 1);
  setenv("RANKFLOW_BROADCAST", "direct:0-64;pushed:64-4k", 1);
  setenv("RANKFLOW_ALL_TO_ALL", "pushed:0-2K", 1);
  const Overrides o = overrides_from_environment();
  EXPECT_TRUE(o.allreduce.empty());
  EXPECT_EQ(allgather_table().select(64, 2, true, o.allgather).name, "mesh");
  EXPECT_EQ(reduce_scatter_table().select(64, 2, true, o.reduce_scatter).name, "mesh");
  EXPECT_EQ(reduce_scatter_table().select(2048, 2, true, o.reduce_scatter).name, "pushed");
  EXPECT_EQ(broadcast_table().select(8, 3, true, o.broadcast).name, "direct");
  EXPECT_EQ(broadcast_table().select(100, 2, true, o.broadcast).name, "pushed");  // not streamed
  EXPECT_EQ(all_to_all_table().select(2047, 4, true, o.all_to_all).name, "pushed");
  EXPECT_EQ(all_to_all_table().select(4096, 4, true, o.all_to_all).name, "pushed");  // table
  EXPECT_EQ(all_to_all_table().select(8192, 4, true, o.all_to_all).name, "mesh");    // table
  for (const char* v : {"RANKFLOW_ALLGATHER", "RANKFLOW_REDUCE_SCATTER", "RANKFLOW_BROADCAST",
                        "RANKFLOW_ALL_TO_ALL"})
    unsetenv(v);
}

// A forced algorithm applies only to messages it serves; others get the built-in choice.
TEST(TablesTest, ForcedAlgorithmOutsideItsLimitsFallsBackToTheTable) {
  const auto pushed_bcast = broadcast_table().parse("pushed");
  EXPECT_EQ(broadcast_table().select(1000, 2, true, pushed_bcast).name, "pushed");
  EXPECT_EQ(broadcast_table().select(1000, 3, true, pushed_bcast).name, "direct");  // 2 only
  EXPECT_EQ(broadcast_table().select(100, 3, true, pushed_bcast).name, "streamed");
  EXPECT_EQ(broadcast_table().select(size_t{1} << 20, 2, true, pushed_bcast).name, "direct");
  const auto streamed = broadcast_table().parse("streamed");
  EXPECT_EQ(broadcast_table().select(1024, 2, true, streamed).name, "pushed");
  EXPECT_EQ(broadcast_table().select(1024, 4, true, streamed).name, "direct");
  const auto pushed = allgather_table().parse("pushed:0-inf");
  EXPECT_EQ(allgather_table().select(size_t{1} << 20, 2, true, pushed).name, "mesh");
  EXPECT_EQ(allgather_table().select(16, 1, true, pushed).name, "mesh");   // pushes need a peer
  EXPECT_EQ(allgather_table().select(16, 2, false, pushed).name, "mesh");  // and an inbox
  // The next rule that serves is taken before the table.
  const auto two = all_to_all_table().parse("pushed:0-inf;mesh:0-inf");
  EXPECT_EQ(all_to_all_table().select(size_t{1} << 20, 2, true, two).name, "mesh");
  EXPECT_EQ(all_to_all_table().select(0, 2, true, two).name, "mesh");  // pushed needs 1+ bytes
}

void expect_bad(const char* variable, const char* value, const char* part, const char* names) {
  setenv(variable, value, 1);
  try {
    overrides_from_environment();
    ADD_FAILURE() << variable << "=" << value << " must be an error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(std::string(variable) + ": ")) << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr(part)) << e.what();
    if (names != nullptr) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(names)) << e.what();
    }
  }
  unsetenv(variable);
}

TEST(TablesTest, BadOverridesNameTheirVariable) {
  expect_bad("RANKFLOW_ALLGATHER", "ring", "'ring'", "valid algorithms are pushed, mesh");
  expect_bad("RANKFLOW_REDUCE_SCATTER", "mesh:0-1q", "'1q'", nullptr);
  expect_bad("RANKFLOW_BROADCAST", "direct:1k-1k", "'direct:1k-1k' has an empty size range",
             nullptr);
  expect_bad("RANKFLOW_BROADCAST", "tree:0-1k", "'tree'",
             "valid algorithms are streamed, pushed, direct");
  expect_bad("RANKFLOW_ALL_TO_ALL", "pushed:0", "'pushed:0' is not name:min-max", nullptr);
  expect_bad("RANKFLOW_ALLREDUCE", "ring:0-1k;mesh:1k-inf", "'mesh'",
             "valid algorithms are onephase, twophase, ring, bidirectional_ring, ibing");
}

// Found by fuzz/env_parsers_fuzz.cpp (fuzz/corpus/env_parsers/regression-size-overflow: selector
// 4, RANKFLOW_ALLREDUCE, then the value): 64000000000g does not fit a size_t, and the parser
// wrapped it around to a small size instead of refusing it.
TEST(TablesTest, FuzzRegressionSizesThatDoNotFitAreRefused) {
  expect_bad("RANKFLOW_ALLREDUCE", "ring:0-64000000000g",
             "'64000000000g' in 'ring:0-64000000000g' is larger than any size", nullptr);
  expect_bad("RANKFLOW_ALLGATHER", "mesh:18446744073709551616-inf",
             "'18446744073709551616' in 'mesh:18446744073709551616-inf' is larger than any size",
             nullptr);
  expect_bad("RANKFLOW_BROADCAST", "direct:0-99999999999999999999k", "is larger than any size",
             nullptr);
  // The largest sizes that fit still parse.
  const auto largest = allgather_table().parse("mesh:17179869183g-18446744073709551615");
  ASSERT_EQ(largest.size(), 1u);
  EXPECT_EQ(largest[0].min_bytes, size_t{17179869183} << 30);
  EXPECT_EQ(largest[0].max_bytes, SIZE_MAX);
}

// Signal kinds: each algorithm's own, numbered densely in the order of their names (the same
// in every process), and a team holds one slot per kind and member.
TEST(SignalKindTest, KindsAreNumberedDenselyByName) {
  const uint32_t count = SignalKind::count();
  ASSERT_GE(count, 5u);  // mesh.ready, mesh.ready2, mesh.done, and the inbox protocols' acks
  std::vector<bool> seen(count, false);
  for (const SignalKind* kind : {&kReady, &kReady2, &kDone, &kBroadcastAck, &kStreamAck}) {
    ASSERT_LT(kind->index(), count) << kind->name();
    EXPECT_FALSE(seen[kind->index()]) << kind->name();
    seen[kind->index()] = true;
  }
  EXPECT_LT(kBroadcastAck.index(), kReady.index());  // "inbox..." < "mesh..."
  EXPECT_LT(kReady.index(), kReady2.index());
  EXPECT_EQ(CollContext::signal_slots_for(4), 4 * count);
  EXPECT_THROW(SignalKind("made.after.numbering"), std::logic_error);
}

// The inbox buffer's layout (every member computes the same offsets, so it is pinned here): the
// push inbox's two parities of slots per sender (32832 bytes on up to four members, 4160 above),
// then the broadcast streams, smallest message first: 256 slots of 16 bytes per sender (four
// to a cache line), 256 of 32 bytes (two to a line), 64 of 576 bytes.
TEST(InboxLayoutTest, PushInboxThenBroadcastStreamsSmallestFirst) {
  static_assert(PushInbox::kPayloadBytes == 4096 && PushInbox::stride(5) == 4160);
  static_assert(PushInbox::kLargePayloadBytes == 32768 && PushInbox::stride(4) == 32832);
  static_assert(CollContext::kInboxBytes == 4096 && CollContext::kStreamBytes == 512);
  constexpr auto& streams = CollContext::kBroadcastStreams;
  static_assert(streams.size() == 3);
  static_assert(streams[0].slots == 256 && streams[0].payload_bytes == 8 &&
                streams[0].ack_every == 64 && streams[0].stride() == 16);
  static_assert(streams[1].slots == 256 && streams[1].payload_bytes == 24 &&
                streams[1].ack_every == 64 && streams[1].stride() == 32);
  static_assert(streams[2].slots == 64 && streams[2].payload_bytes == 512 &&
                streams[2].ack_every == 16 && streams[2].stride() == 576);
  for (int members : {1, 2, 3, 4, 5, 64}) {
    const size_t n = static_cast<size_t>(members);
    const size_t slot = members <= 4 ? 32832 : 4160;
    EXPECT_EQ(PushInbox::payload_bytes(members), members <= 4 ? 32768u : 4096u);
    EXPECT_EQ(PushInbox::region_bytes(members), 2 * slot * n);
    EXPECT_EQ(CollContext::broadcast_stream_start(members, 0), 2 * slot * n);
    EXPECT_EQ(CollContext::broadcast_stream_start(members, 1), (2 * slot + 256 * 16) * n);
    EXPECT_EQ(CollContext::broadcast_stream_start(members, 2),
              (2 * slot + 256 * 16 + 256 * 32) * n);
    EXPECT_EQ(CollContext::inbox_buffer_bytes(members),
              (2 * slot + 256 * 16 + 256 * 32 + 64 * 576) * n);
  }
}

// A broadcast takes the first stream that holds its message, the same on every member.
TEST(InboxLayoutTest, BroadcastTakesTheSmallestStreamThatHoldsIt) {
  for (size_t bytes = 0; bytes <= CollContext::kStreamBytes; ++bytes) {
    const size_t tier = CollContext::broadcast_stream_tier(bytes);
    EXPECT_EQ(tier, bytes <= 8 ? 0u : bytes <= 24 ? 1u : 2u) << bytes << " B";
  }
  // Beyond the largest stream: the last one (whose send refuses the message), never past it.
  EXPECT_EQ(CollContext::broadcast_stream_tier(CollContext::kStreamBytes + 1), 2u);
  EXPECT_EQ(CollContext::broadcast_stream_tier(SIZE_MAX), 2u);
}

// A slot is the flag and the payload: 16 or 32 bytes where that fits, one cache line up to
// 56 bytes of payload, else the flag's line and the payload's own lines (64-byte aligned).
TEST(InboxLayoutTest, StreamSlotsShareCacheLinesOnlyWhenSmall) {
  EXPECT_EQ((StreamShape{8, 1, 4}.stride()), 16u);
  EXPECT_EQ((StreamShape{8, 8, 4}.stride()), 16u);
  EXPECT_EQ((StreamShape{8, 9, 4}.stride()), 32u);
  EXPECT_EQ((StreamShape{8, 24, 4}.stride()), 32u);
  EXPECT_EQ((StreamShape{8, 25, 4}.stride()), 64u);
  EXPECT_EQ((StreamShape{8, 56, 4}.stride()), 64u);
  EXPECT_EQ((StreamShape{8, 57, 4}.stride()), 128u);
  EXPECT_EQ((StreamShape{8, 100, 4}.stride()), 192u);
  EXPECT_EQ((StreamShape{8, 128, 4}.stride()), 192u);
}

// The payload shares the flag's line up to 56 bytes; larger ones start at the next line.
TEST(InboxLayoutTest, LargerPayloadsStartOnTheirOwnCacheLine) {
  EXPECT_EQ(payload_offset(0), 8u);
  EXPECT_EQ(payload_offset(56), 8u);
  EXPECT_EQ(payload_offset(57), 64u);
  EXPECT_EQ(payload_offset(PushInbox::kPayloadBytes), 64u);
  EXPECT_EQ(payload_offset(PushInbox::kLargePayloadBytes), 64u);
  for (int members : {2, 4, 5, 64})
    EXPECT_LE(64 + PushInbox::payload_bytes(members), PushInbox::stride(members));
  EXPECT_LE(64 + CollContext::kStreamBytes, CollContext::kBroadcastStreams.back().stride());
}

// The hand-off hints demote only payloads with lines of their own (never the flag's line, which
// the peer polls), in the measured ranges, and a demoted range keeps its bytes, whatever its
// alignment (the last, partial line included).
TEST(InboxLayoutTest, DemoteHintsSkipTheFlagLineAndKeepTheBytes) {
  EXPECT_FALSE(PushInbox::demotes_pushed(kFlagLinePayload));
  EXPECT_TRUE(PushInbox::demotes_pushed(kFlagLinePayload + 1));
  EXPECT_TRUE(PushInbox::demotes_pushed(4096));
  EXPECT_FALSE(PushInbox::demotes_pushed(4097));
  EXPECT_FALSE(PushInbox::demotes_consumed(kFlagLinePayload));
  EXPECT_TRUE(PushInbox::demotes_consumed(512));
  EXPECT_FALSE(PushInbox::demotes_consumed(513));
  std::vector<unsigned char> bytes(4096 + 128);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::vector<unsigned char> before = bytes;
  for (size_t offset : {0, 1, 63, 64, 65})
    for (size_t length : {0, 1, 64, 100, 4096})
      demote_lines(bytes.data() + offset, length);
  EXPECT_EQ(bytes, before);
}

// A waiting reader fetches the payload's own lines (never for a payload in the flag's line) up to
// the measured bound; the fetch is a hint: satisfied() still answers by the word alone, with
// lines to fetch.
TEST(InboxLayoutTest, WaitsFetchOnlyPayloadsWithLinesOfTheirOwn) {
  EXPECT_FALSE(PushInbox::fetches_ahead(0));
  EXPECT_FALSE(PushInbox::fetches_ahead(kFlagLinePayload));
  EXPECT_TRUE(PushInbox::fetches_ahead(kFlagLinePayload + 1));
  EXPECT_TRUE(PushInbox::fetches_ahead(PushInbox::kFetchAheadBytes));
  EXPECT_FALSE(PushInbox::fetches_ahead(PushInbox::kFetchAheadBytes + 1));
  alignas(64) uint64_t word = 4;
  alignas(64) std::byte payload[512] = {};
  const SignalAwait waiting{&word, 5, 1, payload, 8};
  EXPECT_FALSE(waiting.satisfied());
  word = 5;
  EXPECT_TRUE(waiting.satisfied());
}

}  // namespace
}  // namespace rankflow::coll
