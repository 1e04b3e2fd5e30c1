// Bad input to the headers that need no ranks (issue 12): types.h, error.h and tensor.h, one
// table each. Tensors are placed the way the runtime places them (detail::TensorAccess::make,
// as HostMemory and ChildMemory do), over memory of this test.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../common/bad_input.h"
#include "rankflow/error.h"
#include "rankflow/tensor.h"
#include "rankflow/types.h"
#include "runtime/tensor_access.h"

namespace rankflow::test {
namespace {

using E = ErrorCode;

TEST(BadInput, TypesH) {
  const std::vector<BadCall> table = {
      {"dtype_size of a value past the last DType",
       [] { dtype_size(static_cast<DType>(12)); },
       E::kInvalidArgument,
       {"unknown dtype 12"}},
      {"dtype_size of 255",
       [] { dtype_size(static_cast<DType>(255)); },
       E::kInvalidArgument,
       {"unknown dtype 255"}},
      {"dtype_size of a negative DType",
       [] { dtype_size(static_cast<DType>(-1)); },
       E::kInvalidArgument,
       {"unknown dtype -1"}},
  };
  EXPECT_EQ(run_table(table), table.size());
}

// Each class carries its code, and every message starts with the code's name: the other
// tables rely on both.
TEST(BadInput, ErrorH) {
  const std::vector<BadCall> table = {
      {"InvalidArgument",
       [] { throw InvalidArgument("worker 9"); },
       E::kInvalidArgument,
       {"rankflow invalid argument: worker 9"}},
      {"Timeout",
       [] { throw Timeout("barrier waited 1 s"); },
       E::kTimeout,
       {"rankflow timeout: barrier waited 1 s"}},
      {"OutOfBounds",
       [] { throw OutOfBounds("offset 8"); },
       E::kOutOfBounds,
       {"rankflow out of bounds: offset 8"}},
      {"TransportError",
       [] { throw TransportError("ucp_put"); },
       E::kTransport,
       {"rankflow transport failure: ucp_put"}},
      {"RemoteFailure",
       [] { throw RemoteFailure("rank 2 died"); },
       E::kRemoteFailure,
       {"rankflow remote failure: rank 2 died"}},
      {"InvalidState",
       [] { throw InvalidState("closed"); },
       E::kInvalidState,
       {"rankflow invalid state: closed"}},
  };
  EXPECT_EQ(run_table(table), table.size());
  EXPECT_EQ(to_string(static_cast<ErrorCode>(99)), "unknown error");
}

TEST(BadInput, TensorH) {
  std::vector<std::byte> memory(64);  // a 4 x 4 f32 allocation
  const Tensor x =
      detail::TensorAccess::make(1, 0, 64, {4, 4}, DType::kF32, memory.data(), /*home=*/-1);
  const Tensor child =
      detail::TensorAccess::make(2, 128, 16, {4}, DType::kF32, nullptr, /*home=*/0);
  const std::vector<size_t> seven(7, 1);
  const size_t six[6] = {1, 1, 1, 1, 1, 1};
  const size_t huge = size_t{1} << 62;
  const std::vector<BadCall> table = {
      // Dims: at most five entries, however they are made.
      {"Dims of six entries",
       [] {
         Dims({1, 1, 1, 1, 1, 1});
       },
       E::kInvalidArgument,
       {"1 to 5 dimensions (got 6)"}},
      {"Dims from a vector of seven",
       [&] { Dims d(seven); },
       E::kInvalidArgument,
       {"1 to 5 dimensions (got 7)"}},
      {"Dims from a pointer and six",
       [&] { Dims(six, 6); },
       E::kInvalidArgument,
       {"1 to 5 dimensions (got 6)"}},
      {"Dims::filled with six",
       [] { Dims::filled(6, 1); },
       E::kInvalidArgument,
       {"1 to 5 dimensions (got 6)"}},
      // Views of nothing.
      {"view of an empty tensor",
       [] { Tensor().view({4}); },
       E::kInvalidArgument,
       {"Tensor::view(shape {4}", "of an empty tensor"}},
      {"slice of an empty tensor",
       [] { Tensor().slice(0, 0, 1); },
       E::kInvalidArgument,
       {"Tensor::slice(0, 0, 1): outside a tensor of shape {}"}},
      {"rows of an empty tensor",
       [] { Tensor().rows(0, 1); },
       E::kInvalidArgument,
       {"Tensor::slice(0, 0, 1): outside a tensor of shape {}"}},
      {"host() of an empty tensor",
       [] { Tensor().host<float>(); },
       E::kInvalidArgument,
       {"Tensor::host: an empty tensor"}},
      // view(): shape, strides and offset inside the allocation.
      {"view without dimensions",
       [&] { x.view(Dims{}); },
       E::kInvalidArgument,
       {"Tensor::view(shape {}", "a view has 1 to 5 dimensions"}},
      {"view with fewer strides than dimensions",
       [&] {
         x.view({2, 2}, {1});
       },
       E::kInvalidArgument,
       {"strides {1}", "one stride per dimension"}},
      {"view with a zero stride",
       [&] { x.view({2}, {0}); },
       E::kInvalidArgument,
       {"strides {0}", "strides must be positive"}},
      {"view at an offset inside an element",
       [&] { x.view({2}, {}, 2); },
       E::kInvalidArgument,
       {"byte offset 2", "not a multiple of the element size (4 bytes)"}},
      {"view longer than the allocation",
       [&] { x.view({17}); },
       E::kInvalidArgument,
       {"shape {17}", "reaches outside its allocation of 64 bytes"}},
      {"view starting at the allocation's end",
       [&] { x.view({1}, {}, 64); },
       E::kInvalidArgument,
       {"byte offset 64", "reaches outside its allocation of 64 bytes"}},
      {"view at an offset that wraps around",
       [&] { x.view({2}, {}, SIZE_MAX - 3); },
       E::kInvalidArgument,
       {"reaches outside its allocation of 64 bytes"}},
      {"view whose strides step past the end",
       [&] { x.view({4}, {6}); },
       E::kInvalidArgument,
       {"strides {6}", "reaches outside its allocation of 64 bytes"}},
      {"view whose element count overflows",
       [&] {
         x.view({huge, 4});
       },
       E::kInvalidArgument,
       {"shape {" + std::to_string(huge) + ", 4}", "reaches outside its allocation"}},
      {"view whose extent overflows",
       [&] {
         x.view({2, 2}, {huge, 1});
       },
       E::kInvalidArgument,
       {"strides {" + std::to_string(huge) + ", 1}", "reaches outside its allocation"}},
      {"view of a slice past the parent's allocation",
       [&] { x.slice(0, 2, 4).view({9}); },
       E::kInvalidArgument,
       {"shape {9}", "reaches outside its allocation of 64 bytes"}},
      // slice() and rows().
      {"slice of a dimension that does not exist",
       [&] { x.slice(2, 0, 1); },
       E::kInvalidArgument,
       {"Tensor::slice(2, 0, 1): outside a tensor of shape {4, 4}"}},
      {"slice that ends before it begins",
       [&] { x.slice(0, 3, 2); },
       E::kInvalidArgument,
       {"Tensor::slice(0, 3, 2): outside a tensor of shape {4, 4}"}},
      {"slice past the end of a dimension",
       [&] { x.slice(1, 0, 5); },
       E::kInvalidArgument,
       {"Tensor::slice(1, 0, 5): outside a tensor of shape {4, 4}"}},
      {"rows past the last row",
       [&] { x.rows(3, 2); },
       E::kInvalidArgument,
       {"Tensor::slice(0, 3, 5): outside a tensor of shape {4, 4}"}},
      // Host access: host memory, the element type, and contiguity for host().
      {"host() with a wider element type",
       [&] { x.host<double>(); },
       E::kInvalidArgument,
       {"Tensor::host: element type of 8 bytes for a f32 tensor"}},
      {"host_view() with a narrower element type",
       [&] { x.host_view<uint16_t>(); },
       E::kInvalidArgument,
       {"Tensor::host: element type of 2 bytes for a f32 tensor"}},
      {"host() of child memory",
       [&] { child.host<float>(); },
       E::kInvalidArgument,
       {"not host memory", "chip worker 0", "copy_from"}},
      {"host_view() of child memory",
       [&] { child.host_view<float>(); },
       E::kInvalidArgument,
       {"not host memory", "chip worker 0"}},
      {"host() of a strided view",
       [&] { x.slice(1, 0, 2).host<float>(); },
       E::kInvalidArgument,
       {"Tensor::host: a strided view (shape {4, 2}, strides {4, 1})", "host_view"}},
  };
  EXPECT_EQ(run_table(table), table.size());
  // The same calls within the limits are fine (the table's cases are not refused wholesale).
  EXPECT_NO_THROW(Dims({1, 1, 1, 1, 1}));
  EXPECT_NO_THROW(x.view({4}, {5}));
  EXPECT_NO_THROW(x.slice(1, 0, 2).host_view<float>());
  EXPECT_NO_THROW(x.rows(3, 1).host<float>());
  EXPECT_NO_THROW(child.view({2}, {}, 8));
}

}  // namespace
}  // namespace rankflow::test
