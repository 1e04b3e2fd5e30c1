// The task descriptor's byte format: what the host encodes is what a chip decodes, at the
// reference's limits (256 tensor arguments, 128 scalars, 5 dimensions), and the decoder refuses
// every malformed descriptor with a TransportError instead of reading past what arrived.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_corpus.h"
#include "rankflow/error.h"
#include "runtime/task_codec.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {
namespace {

using ::testing::HasSubstr;

Tensor tensor(uint64_t buffer, size_t offset, std::vector<size_t> shape) {
  size_t elements = 1;
  for (size_t d : shape)
    elements *= d;
  return detail::TensorAccess::make(buffer, offset, elements * 4, std::move(shape), DType::kF32,
                                    nullptr, -1);
}

std::shared_ptr<TaskState> task_with(std::vector<TaskArg> args) {
  auto task = std::make_shared<TaskState>();
  task->id = 77;
  task->fn = 3;
  task->workers = {1};
  task->config = {4, 1024};
  task->member_args.push_back(std::move(args));
  return task;
}

TEST(TaskCodec, RoundTripsTensorsScalarsAndStrides) {
  Tensor x = tensor(1, 4096, {2, 3, 4, 5, 6});
  Tensor box = x.slice(1, 1, 3).slice(4, 2, 5);
  auto task = task_with({scalar(int32_t{-5}), in(x), out_existing(box), scalar(1.5)});
  std::vector<std::byte> slot(kDescStride);
  const size_t bytes = encode_task(*task, 0, slot.data());
  DecodedTask d;
  decode_task(slot.data(), bytes, d);
  EXPECT_EQ(d.header.task_id, 77u);
  EXPECT_EQ(d.header.kernel, 3u);
  EXPECT_EQ(d.header.threads, 4u);
  EXPECT_EQ(d.header.scratch_bytes, 1024u);
  ASSERT_EQ(d.args.size(), 2u);
  EXPECT_EQ(d.args[0].record.offset, 4096u);
  EXPECT_EQ(d.args[0].record.ndim, 5u);
  EXPECT_EQ(d.args[1].record.access, static_cast<uint32_t>(Access::kOutputExisting));
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(d.args[1].shape[k], box.shape()[k]);
    EXPECT_EQ(d.args[1].strides[k], box.strides()[k]);
  }
  ASSERT_EQ(d.scalars.size(), 2u);
  int32_t i = 0;
  double f = 0;
  std::memcpy(&i, &d.scalars[0], sizeof(i));
  std::memcpy(&f, &d.scalars[1], sizeof(f));
  EXPECT_EQ(i, -5);
  EXPECT_EQ(f, 1.5);
}

TEST(TaskCodec, TheLargestTaskFitsItsSlot) {
  std::vector<TaskArg> args;
  for (int i = 0; i < 256; ++i)
    args.push_back(in(tensor(static_cast<uint64_t>(i + 1), 0, {1, 2, 3, 4, 5})));
  for (int i = 0; i < 128; ++i)
    args.push_back(scalar(i));
  auto task = task_with(std::move(args));
  std::vector<std::byte> slot(kDescStride);
  const size_t bytes = encode_task(*task, 0, slot.data());
  EXPECT_LE(bytes, kDescStride);
  DecodedTask d;
  decode_task(slot.data(), bytes, d);
  EXPECT_EQ(d.args.size(), 256u);
  EXPECT_EQ(d.scalars.size(), 128u);
  EXPECT_EQ(d.scalars[127], 127u);
}

TEST(TaskCodec, RingDependenciesTravelInTheHeader) {
  auto task = task_with({in(tensor(1, 0, {8}))});
  std::vector<std::byte> slot(kDescStride);
  const uint32_t deps = 0b101 | 1u << (kRingSlots - 2);  // 1, 3 and 15 places back
  const size_t bytes = encode_task(*task, 0, slot.data(), deps);
  DecodedTask d;
  decode_task(slot.data(), bytes, d);
  EXPECT_EQ(d.header.ring_deps, deps);
}

TEST(TaskCodec, MalformedDescriptorsAreTransportErrors) {
  auto task = task_with({in(tensor(1, 0, {8})), scalar(9)});
  std::vector<std::byte> good(kDescStride);
  const size_t bytes = encode_task(*task, 0, good.data());
  auto expect_refused = [&](std::vector<std::byte> slot, size_t available, const char* what) {
    DecodedTask d;
    try {
      decode_task(slot.data(), available, d);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const TransportError& e) {
      EXPECT_THAT(e.what(), HasSubstr("malformed task descriptor")) << what;
    }
  };
  expect_refused(good, sizeof(DescHeader) - 1, "shorter than a header");
  expect_refused(good, bytes - 1, "fewer bytes arrived than it says");
  auto with_header = [&](auto edit) {
    std::vector<std::byte> slot = good;
    DescHeader h;
    std::memcpy(&h, slot.data(), sizeof(h));
    edit(h);
    std::memcpy(slot.data(), &h, sizeof(h));
    return slot;
  };
  expect_refused(with_header([](DescHeader& h) { h.kind = static_cast<DescKind>(9); }), bytes,
                 "an unknown kind");
  expect_refused(with_header([](DescHeader& h) { h.tensor_args = 257; }), bytes,
                 "too many tensors");
  expect_refused(with_header([](DescHeader& h) { h.scalar_args = 2; }), bytes,
                 "scalars past the end");
  expect_refused(with_header([](DescHeader& h) { h.payload_bytes = 9000; }), bytes,
                 "a payload too large");
  expect_refused(with_header([](DescHeader& h) { h.ring_deps = 1u << (kRingSlots - 1); }), bytes,
                 "a ring dependency as far back as the ring is long");
  std::vector<std::byte> six_dims = good;
  ArgRecord r;
  std::memcpy(&r, six_dims.data() + sizeof(DescHeader), sizeof(r));
  r.ndim = 6;
  std::memcpy(six_dims.data() + sizeof(DescHeader), &r, sizeof(r));
  expect_refused(six_dims, bytes, "six dimensions");
  r.ndim = 1;
  r.space = 7;
  std::memcpy(six_dims.data() + sizeof(DescHeader), &r, sizeof(r));
  expect_refused(six_dims, bytes, "an unknown space");
  r.space = kHostSpace;
  r.access = 9;
  std::memcpy(six_dims.data() + sizeof(DescHeader), &r, sizeof(r));
  expect_refused(six_dims, bytes, "an access outside rankflow::Access");
}

using rankflow::test::corpus_file;

// Found by fuzz/task_descriptor_fuzz.cpp: a domain argument whose id does not fit the 32 bits
// of a domain's id was cut to its low bits, naming another domain of the run.
TEST(TaskCodec, FuzzRegressionDomainIdsPast32BitsAreRefused) {
  const auto slot = corpus_file("task_descriptor/regression-domain-id-past-32-bits");
  DecodedTask d;
  try {
    decode_task(slot.data(), slot.size(), d);
    FAIL() << "accepted a domain id past 32 bits";
  } catch (const TransportError& e) {
    EXPECT_THAT(e.what(), HasSubstr("malformed task descriptor: argument 0 names domain "
                                    "3530822107858468865; domain ids are 32-bit"));
  }
  // The same descriptor with the id's high bits cleared is a domain argument like any other.
  auto fixed = slot;
  ArgRecord r;
  std::memcpy(&r, fixed.data() + sizeof(DescHeader), sizeof(r));
  r.offset &= UINT32_MAX;
  std::memcpy(fixed.data() + sizeof(DescHeader), &r, sizeof(r));
  decode_task(fixed.data(), fixed.size(), d);
  EXPECT_EQ(d.args[0].record.space, kDomainSpace);
}

}  // namespace
}  // namespace rankflow::runtime
