// A chip's argument path without MPI (runtime/chip_args.h): ChipArgs over a plain-memory team
// maps or stages each argument, refuses one outside its arena with a TransportError, and
// writes back only a strided output's elements; the built-in copy kernel on what it builds.
// The regression feeds an input fuzz/arg_blob_fuzz.cpp crashed on (fuzz/corpus/arg_blob/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_corpus.h"
#include "rankflow/error.h"
#include "runtime/builtin_kernels.h"
#include "runtime/chip_args.h"
#include "runtime/task_codec.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {
namespace {

using ::testing::HasSubstr;

// As arg_blob_fuzz.cpp lays them out: the arena at 4096 of the host's window (16 KiB), child
// memory at 1024 of the chip's (4 KiB).
constexpr ArgSpaces kSpaces{4096, 16 << 10, 1024, 4 << 10};

// Team's data path over two plain blocks; `mapped` false stages the arena's arguments.
struct PlainTeam {
  bool mapped = true;
  std::vector<std::byte> arena = std::vector<std::byte>(kSpaces.arena_bytes);
  std::vector<std::byte> child = std::vector<std::byte>(kSpaces.child_bytes);
  int gets = 0;
  int puts = 0;

  std::byte* local_ptr(size_t offset) { return child.data() + (offset - kSpaces.child); }
  void* remote_ptr(int, size_t offset) {
    return mapped ? arena.data() + (offset - kSpaces.arena) : nullptr;
  }
  void get(int, size_t offset, void* dst, size_t bytes) {
    ++gets;
    std::memcpy(dst, arena.data() + (offset - kSpaces.arena), bytes);
  }
  void put(int, size_t offset, const void* src, size_t bytes) {
    ++puts;
    std::memcpy(arena.data() + (offset - kSpaces.arena), src, bytes);
  }
  void flush() {}
};

using rankflow::test::corpus_file;

DecodedTask decoded(std::vector<TaskArg> args, uint32_t kernel = 3) {
  TaskState task;
  task.id = 1;
  task.fn = kernel;
  task.workers = {0};
  task.member_args.push_back(std::move(args));
  std::vector<std::byte> slot(kDescStride);
  const size_t bytes = encode_task(task, 0, slot.data());
  DecodedTask d;
  decode_task(slot.data(), bytes, d);
  return d;
}

Tensor f32(size_t offset, std::vector<size_t> shape, int home = -1) {
  size_t elements = 1;
  for (size_t d : shape)
    elements *= d;
  return detail::TensorAccess::make(1, offset, elements * 4, std::move(shape), DType::kF32, nullptr,
                                    home);
}

TEST(ChipArgs, StagedStridedOutputsGoBackElementByElement) {
  // Columns 1..2 of a 4 x 4 matrix at arena offset 256: 2 runs of 8 bytes per row.
  const Tensor m = f32(256, {4, 4});
  const DecodedTask task = decoded({out_existing(m.slice(1, 1, 3))});
  PlainTeam team;
  team.mapped = false;
  for (size_t i = 0; i < team.arena.size(); ++i)
    team.arena[i] = std::byte{0x11};
  ChipDomains domains;
  ChipArgs<PlainTeam> args(team, kSpaces, task, domains, 0);
  EXPECT_EQ(team.gets, 1);  // out_existing reads what is there
  auto list = args.take();
  ASSERT_EQ(list.size(), 1u);
  std::memset(list[0].data, 0x22, task.args[0].record.extent);  // the gaps too, locally
  args.write_back();
  EXPECT_EQ(team.puts, 4);  // one run per row
  for (size_t row = 0; row < 4; ++row) {
    for (size_t col = 0; col < 4; ++col) {
      const std::byte want = col == 1 || col == 2 ? std::byte{0x22} : std::byte{0x11};
      EXPECT_EQ(team.arena[256 + (row * 4 + col) * 4], want) << row << ", " << col;
    }
  }
}

TEST(ChipArgs, ArgumentsOutsideTheirMemoryAreTransportErrors) {
  PlainTeam team;
  ChipDomains domains;
  const DecodedTask past_arena = decoded({in(f32((16 << 10) - 8, {4}))});
  try {
    ChipArgs<PlainTeam> args(team, kSpaces, past_arena, domains, 0);
    FAIL() << "accepted an argument past the arena";
  } catch (const TransportError& e) {
    EXPECT_THAT(e.what(), HasSubstr("argument 0 names bytes [16376, +16) outside the arena of "
                                    "16384 bytes"));
  }
  const DecodedTask past_child = decoded({in(f32(4090, {4}, 0))});
  EXPECT_THROW(ChipArgs<PlainTeam>(team, kSpaces, past_child, domains, 0), TransportError);
  DecodedTask bad_shape = decoded({in(f32(0, {4}))});
  bad_shape.args[0].shape[0] = 5;
  try {
    ChipArgs<PlainTeam> args(team, kSpaces, bad_shape, domains, 0);
    FAIL() << "accepted a shape past the argument's bytes";
  } catch (const TransportError& e) {
    EXPECT_THAT(e.what(), HasSubstr("argument 0's shape and strides do not match its 16 bytes"));
  }
}

// Found by fuzz/arg_blob_fuzz.cpp: a copy descriptor whose destination and source overlap in
// the same memory. The built-in copy kernel memcpy'd them (undefined behaviour, reported by
// AddressSanitizer as memcpy-param-overlap); it now moves them, as memmove does.
TEST(ChipArgs, FuzzRegressionCopyOfOverlappingRanges) {
  const auto slot = corpus_file("arg_blob/regression-copy-overlapping-ranges");
  DecodedTask task;
  decode_task(slot.data(), slot.size(), task);
  ASSERT_EQ(task.header.kernel, kCopyKernel);
  ASSERT_GE(task.args.size(), 2u);
  const ArgRecord dst = task.args[0].record;
  const ArgRecord src = task.args[1].record;
  ASSERT_EQ(dst.space, src.space) << "the ranges overlap in one memory";
  PlainTeam team;  // mapped, so both arguments point into the same block
  std::vector<std::byte>& memory = dst.space == kChildSpace ? team.child : team.arena;
  for (size_t i = 0; i < memory.size(); ++i)
    memory[i] = static_cast<std::byte>(i * 7);
  std::vector<std::byte> expected = memory;
  const size_t bytes = std::min(dst.bytes, src.bytes);
  std::memmove(expected.data() + dst.offset, expected.data() + src.offset, bytes);
  ASSERT_LT(dst.offset < src.offset ? src.offset - dst.offset : dst.offset - src.offset, bytes)
      << "the regression input's ranges overlap";
  ChipDomains domains;
  ChipArgs<PlainTeam> args(team, kSpaces, task, domains, 0);
  TaskContext context({0, task.header.task_id, 0, 1}, args.take(), task.scalars);
  ChipEnv env{nullptr, domains};
  find_builtin(kCopyKernel)->run(env, context, task.payload);
  args.write_back();
  EXPECT_EQ(memory, expected);
}

// Found by fuzz/arg_blob_fuzz.cpp in CI: a copy descriptor with an empty argument. The built-in
// copy kernel passed the empty view's null data() to memmove for zero bytes (undefined
// behaviour, reported by UndefinedBehaviorSanitizer, which the asan job's unit run has on); it
// now copies nothing without calling it.
TEST(ChipArgs, FuzzRegressionCopyOfNothing) {
  const auto slot = corpus_file("arg_blob/regression-copy-of-nothing");
  DecodedTask task;
  decode_task(slot.data(), slot.size(), task);
  ASSERT_EQ(task.header.kernel, kCopyKernel);
  for (bool mapped : {true, false}) {  // staged: the empty view is an empty local copy
    SCOPED_TRACE(mapped ? "mapped" : "staged");
    PlainTeam team;
    team.mapped = mapped;
    const std::vector<std::byte> arena = team.arena, child = team.child;
    ChipDomains domains;
    try {
      ChipArgs<PlainTeam> args(team, kSpaces, task, domains, 0);
      TaskContext context({0, task.header.task_id, 0, 1}, args.take(), task.scalars);
      ChipEnv env{nullptr, domains};
      find_builtin(kCopyKernel)->run(env, context, task.payload);
      args.write_back();
    } catch (const Error&) {
      // a refusal of the descriptor is as good: the point is no call with a null pointer
    }
    EXPECT_EQ(team.arena, arena) << "a copy of nothing changed the arena";
    EXPECT_EQ(team.child, child) << "a copy of nothing changed child memory";
  }
}

// Found by fuzz/arg_blob_fuzz.cpp in CI: a 4x4 view whose strides put its last element at index
// 2^64 - 1. The check added one to that index without looking, the count wrapped to 0, and the
// view passed as reaching 0 bytes: the kernel then wrote far outside its argument.
TEST(ChipArgs, FuzzRegressionALastElementIndexThatWrapsIsRefused) {
  const auto slot = corpus_file("arg_blob/regression-last-element-index-wraps");
  DecodedTask task;
  decode_task(slot.data(), slot.size(), task);
  ASSERT_GE(task.args.size(), 2u);
  ASSERT_EQ(task.args[1].record.ndim, 2u);
  PlainTeam team;
  ChipDomains domains;
  try {
    ChipArgs<PlainTeam> args(team, kSpaces, task, domains, 0);
    ADD_FAILURE() << "a view whose last element index wraps around was accepted";
  } catch (const TransportError& e) {
    EXPECT_THAT(e.what(), HasSubstr("argument 1's shape and strides do not match"));
  }
}

}  // namespace
}  // namespace rankflow::runtime
