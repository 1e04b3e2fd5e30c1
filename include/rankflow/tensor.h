// rankflow/tensor.h: tensors of the DAG runtime and how tasks use them.
//
// A Tensor names part of an allocation: a byte offset, a shape and strides (in elements) into
// host memory (host_tensor, alloc) or a chip's child memory (alloc_child_tensor). Views of one
// allocation share its identity, so the runtime orders tasks by the exact elements they touch:
//
//   auto x = orch.host_tensor<float>({16, 16});
//   auto left = x.slice(1, 0, 4);    // columns 0..3 of every row: a strided view
//   auto right = x.slice(1, 8, 12);  // columns 8..11: no dependency on `left`
//
// Kernels read contiguous arguments as std::span (TaskContext::input/output) and strided ones
// as a View (TaskContext::view), indexed with one index per dimension. A tensor has 1 to 5
// dimensions. How a task uses one (in, out, inout, ...) is in rankflow/task_arg.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rankflow/types.h"

namespace rankflow {

namespace detail {
struct TensorAccess;  // the runtime's access to a tensor's placement
}  // namespace detail

// How a task uses a tensor argument (the reference's tags).
enum class Access : uint8_t {
  kInput,           // read
  kOutput,          // written entirely (a new value)
  kInOut,           // read and written
  kOutputExisting,  // written, into memory that already holds data
  kNoDep,           // passed through without creating dependencies
};

// Strided access to elements of type T: view(i, j) is element (i, j).
template <typename T>
class View {
 public:
  View(T* data, std::vector<size_t> shape, std::vector<size_t> strides)
      : data_(data), shape_(std::move(shape)), strides_(std::move(strides)) {}
  T* data() const { return data_; }
  const std::vector<size_t>& shape() const { return shape_; }
  const std::vector<size_t>& strides() const { return strides_; }  // in elements
  size_t size() const {
    size_t n = shape_.empty() ? 0 : 1;
    for (size_t d : shape_)
      n *= d;
    return n;
  }
  // One index per dimension (not bounds-checked).
  template <typename... Index>
  T& operator()(Index... index) const {
    const size_t indices[] = {static_cast<size_t>(index)...};
    size_t offset = 0;
    for (size_t d = 0; d < sizeof...(Index); ++d)
      offset += indices[d] * strides_[d];
    return data_[offset];
  }

 private:
  T* data_;
  std::vector<size_t> shape_;
  std::vector<size_t> strides_;
};

// A view of memory: a byte offset into an allocation, a shape, strides in elements, a dtype.
class Tensor {
 public:
  Tensor() = default;
  const std::vector<size_t>& shape() const { return shape_; }
  const std::vector<size_t>& strides() const { return strides_; }  // in elements
  DType dtype() const { return dtype_; }
  size_t elements() const;
  size_t bytes() const { return elements() * dtype_size(dtype_); }  // of the elements
  // Bytes from the first element to the end of the last (bytes() when contiguous).
  size_t extent_bytes() const;
  bool contiguous() const;  // row-major without gaps
  // Where the memory lives: -1 for the host, else the chip worker that holds it (child memory).
  int home() const { return home_; }

  // Host-side access (on the host only, outside running tasks that write it). host() needs a
  // contiguous tensor (InvalidArgument otherwise); host_view() takes any.
  template <typename T>
  std::span<T> host() const {
    check_host_span(sizeof(T));
    return {reinterpret_cast<T*>(data_), bytes() / sizeof(T)};
  }
  template <typename T>
  View<T> host_view() const {
    check_host_span(sizeof(T));
    return {reinterpret_cast<T*>(data_), shape_, strides_};
  }

  // A view of the same allocation starting `byte_offset` bytes after this tensor's first
  // element, with `shape` and `strides` in elements (empty: row-major contiguous). It must lie
  // inside the allocation (InvalidArgument otherwise).
  Tensor view(std::vector<size_t> shape, std::vector<size_t> strides = {},
              size_t byte_offset = 0) const;
  // Elements [begin, end) of dimension `dim`, every other dimension whole.
  Tensor slice(size_t dim, size_t begin, size_t end) const;
  // Rows [first, first + count) of the leading dimension: slice(0, first, first + count).
  Tensor rows(size_t first, size_t count) const { return slice(0, first, first + count); }

 private:
  friend struct detail::TensorAccess;
  void check_host_span(size_t element_bytes) const;
  uint64_t buffer_ = 0;  // identity of the allocation (dependencies are per allocation)
  size_t offset_ = 0;    // bytes from the start of the arena to the first element
  std::vector<size_t> shape_;
  std::vector<size_t> strides_;
  DType dtype_ = DType::kF32;
  std::byte* data_ = nullptr;  // host memory of the first element, or null for child memory
  int home_ = -1;
  size_t alloc_begin_ = 0;  // the allocation's bytes in its arena, for checking views
  size_t alloc_end_ = 0;
  std::shared_ptr<void> lease_;  // orch.alloc: the memory is reclaimed when the last copy goes
};

// Row-major strides (in elements) of a contiguous `shape`.
std::vector<size_t> contiguous_strides(const std::vector<size_t>& shape);
// Whether `strides` (in elements; empty means row-major) lay `shape` out without gaps.
bool is_contiguous(const std::vector<size_t>& shape, const std::vector<size_t>& strides);

}  // namespace rankflow
