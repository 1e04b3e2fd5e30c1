// Collective building blocks without MPI: partitions, reduction kernels and f16/bf16
// conversions, and the algorithm table with its RANKFLOW_ALLREDUCE override.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "collectives/coll_context.h"
#include "collectives/reduce.h"
#include "collectives/registry.h"
#include "rankflow/error.h"

namespace rankflow::coll {
namespace {

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
  EXPECT_EQ(default_allreduce(4096, 2).name, "onephase");  // the largest pushed message
  EXPECT_EQ(default_allreduce(4100, 2).name, "twophase");
  EXPECT_EQ(default_allreduce(size_t{64} << 20, 4).name, "twophase");
}

TEST(RegistryTest, OverrideRulesParse) {
  auto rules = parse_size_rules("onephase:0-64k; twophase:64k-inf");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].max_bytes, 65536u);
  EXPECT_EQ(rules[1].algorithm->name, "twophase");
  EXPECT_EQ(rules[1].max_bytes, SIZE_MAX);
  EXPECT_EQ(parse_size_rules("ibing")[0].algorithm->name, "ibing");
  EXPECT_THROW(parse_size_rules("ring:10-5"), InvalidArgument);
  EXPECT_THROW(parse_size_rules("ring:1x-5"), InvalidArgument);
  EXPECT_THROW(parse_size_rules("ring:0"), InvalidArgument);
  EXPECT_THROW(parse_size_rules("tree:0-1k"), InvalidArgument);
}

TEST(RegistryTest, EnvironmentOverrideChoosesBySize) {
  setenv("RANKFLOW_ALLREDUCE", "ring:0-1k;ibing:1k-1m", 1);
  const auto rules = overrides_from_environment();
  EXPECT_EQ(select_allreduce("auto", 100, 4, rules).name, "ring");
  EXPECT_EQ(select_allreduce("auto", 4096, 4, rules).name, "ibing");
  EXPECT_EQ(select_allreduce("auto", size_t{8} << 20, 4, rules).name, "twophase");  // table
  EXPECT_EQ(select_allreduce("onephase", 100, 4, rules).name, "onephase");          // explicit wins
  setenv("RANKFLOW_ALLREDUCE", "fastest", 1);
  try {
    overrides_from_environment();
    FAIL() << "an unknown name must be an error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("valid algorithms are onephase, twophase"));
  }
  unsetenv("RANKFLOW_ALLREDUCE");
  EXPECT_TRUE(overrides_from_environment().empty());
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

// The inbox buffer's layout is part of the wire protocol (every member must agree, and it was
// fixed before the protocols moved into their own files): the push inbox's two parities of
// 4160-byte slots per sender, then the broadcast stream's 64 slots of 576 bytes per sender.
TEST(InboxLayoutTest, PushInboxThenBroadcastStreamAsBefore) {
  static_assert(PushInbox::kPayloadBytes == 4096 && PushInbox::kStride == 4160);
  static_assert(CollContext::kInboxBytes == 4096 && CollContext::kStreamBytes == 512);
  constexpr StreamShape shape = CollContext::kBroadcastStream;
  static_assert(shape.slots == 64 && shape.payload_bytes == 512 && shape.ack_every == 16);
  static_assert(shape.stride() == 576);
  for (int members : {1, 2, 3, 64}) {
    const size_t n = static_cast<size_t>(members);
    EXPECT_EQ(PushInbox::region_bytes(members), 2 * 4160 * n);
    EXPECT_EQ(shape.region_bytes(members), 64 * 576 * n);
    EXPECT_EQ(CollContext::inbox_buffer_bytes(members), (2 * 4160 + 64 * 576) * n);
  }
  EXPECT_EQ((StreamShape{8, 100, 4}.stride()), 128u);  // 8-byte flag + payload, whole lines
  EXPECT_EQ((StreamShape{8, 56, 4}.stride()), 64u);
}

}  // namespace
}  // namespace rankflow::coll
