// TensorAccess: the runtime's view of where a Tensor lives (its allocation, arena offset and
// host address), which the public Tensor keeps private. Plain accessors; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rankflow/tensor.h"

namespace rankflow::detail {

struct TensorAccess {
  // A contiguous tensor over a whole new allocation of `bytes` at `offset` of its arena.
  static Tensor make(uint64_t buffer, size_t offset, size_t bytes, const Dims& shape, DType dtype,
                     std::byte* data, int home) {
    Tensor t;
    t.buffer_ = buffer;
    t.offset_ = offset;
    t.strides_ = contiguous_strides(shape);
    t.shape_ = shape;
    t.dtype_ = dtype;
    t.data_ = data;
    t.home_ = home;
    t.alloc_begin_ = offset;
    t.alloc_end_ = offset + bytes;
    return t;
  }
  static void set_lease(Tensor& t, std::shared_ptr<void> lease) { t.lease_ = std::move(lease); }
  static uint64_t buffer(const Tensor& t) { return t.buffer_; }
  static size_t offset(const Tensor& t) { return t.offset_; }  // of the first element
  static size_t alloc_begin(const Tensor& t) { return t.alloc_begin_; }
  static std::byte* data(const Tensor& t) { return t.data_; }
};

}  // namespace rankflow::detail
