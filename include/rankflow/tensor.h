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
#include <initializer_list>
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

namespace detail {
[[noreturn]] void throw_too_many_dims(size_t n);
}  // namespace detail

// A shape or strides: up to kMax extents, held inline so that tensors copy without allocating.
// Reads like a std::vector<size_t> (size, [], iteration, ==) and converts to one. More than
// kMax entries is InvalidArgument.
class Dims {
 public:
  static constexpr size_t kMax = 5;
  using value_type = size_t;
  using const_iterator = const size_t*;
  using iterator = const size_t*;

  Dims() = default;
  Dims(std::initializer_list<size_t> d) { assign(d.begin(), d.size()); }
  Dims(const std::vector<size_t>& d) { assign(d.data(), d.size()); }  // NOLINT: implicit
  Dims(const size_t* d, size_t n) { assign(d, n); }
  static Dims filled(size_t n, size_t value) {
    Dims d;
    if (n > kMax) detail::throw_too_many_dims(n);
    d.size_ = static_cast<uint32_t>(n);
    for (size_t i = 0; i < n; ++i)
      d.dims_[i] = value;
    return d;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const size_t* data() const { return dims_; }
  const size_t* begin() const { return dims_; }
  const size_t* end() const { return dims_ + size_; }
  size_t operator[](size_t i) const { return dims_[i]; }
  size_t& operator[](size_t i) { return dims_[i]; }
  size_t front() const { return dims_[0]; }
  size_t back() const { return dims_[size_ - 1]; }
  operator std::vector<size_t>() const { return {begin(), end()}; }  // NOLINT: implicit
  std::vector<size_t> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.size_ != b.size_) return false;
    for (uint32_t i = 0; i < a.size_; ++i)
      if (a.dims_[i] != b.dims_[i]) return false;
    return true;
  }
  friend bool operator==(const Dims& a, const std::vector<size_t>& b) { return a == Dims(b); }

 private:
  void assign(const size_t* d, size_t n) {
    if (n > kMax) detail::throw_too_many_dims(n);
    size_ = static_cast<uint32_t>(n);
    for (size_t i = 0; i < n; ++i)
      dims_[i] = d[i];
  }
  size_t dims_[kMax] = {};
  uint32_t size_ = 0;
};

// Strided access to elements of type T: view(i, j) is element (i, j).
template <typename T>
class View {
 public:
  View(T* data, Dims shape, Dims strides) : data_(data), shape_(shape), strides_(strides) {}
  T* data() const { return data_; }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }  // in elements
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
  Dims shape_;
  Dims strides_;
};

// A view of memory: a byte offset into an allocation, a shape, strides in elements, a dtype.
class Tensor {
 public:
  Tensor() = default;
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }  // in elements
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
    check_host_span(sizeof(T), /*contiguous_span=*/true);
    return {reinterpret_cast<T*>(data_), bytes() / sizeof(T)};
  }
  template <typename T>
  View<T> host_view() const {
    check_host_span(sizeof(T), /*contiguous_span=*/false);
    return {reinterpret_cast<T*>(data_), shape_, strides_};
  }

  // A view of the same allocation starting `byte_offset` bytes after this tensor's first
  // element, with `shape` and `strides` in elements (empty: row-major contiguous). It must lie
  // inside the allocation (InvalidArgument otherwise).
  Tensor view(Dims shape, Dims strides = {}, size_t byte_offset = 0) const;
  // Elements [begin, end) of dimension `dim`, every other dimension whole.
  Tensor slice(size_t dim, size_t begin, size_t end) const;
  // Rows [first, first + count) of the leading dimension: slice(0, first, first + count).
  Tensor rows(size_t first, size_t count) const { return slice(0, first, first + count); }

 private:
  friend struct detail::TensorAccess;
  void check_host_span(size_t element_bytes, bool contiguous_span) const;
  uint64_t buffer_ = 0;  // identity of the allocation (dependencies are per allocation)
  size_t offset_ = 0;    // bytes from the start of the arena to the first element
  Dims shape_;
  Dims strides_;
  DType dtype_ = DType::kF32;
  std::byte* data_ = nullptr;  // host memory of the first element, or null for child memory
  int home_ = -1;
  size_t alloc_begin_ = 0;  // the allocation's bytes in its arena, for checking views
  size_t alloc_end_ = 0;
  std::shared_ptr<void> lease_;  // orch.alloc: the memory is reclaimed when the last copy goes
};

// Row-major strides (in elements) of a contiguous `shape`.
Dims contiguous_strides(const Dims& shape);
// Whether `strides` (in elements; empty means row-major) lay `shape` out without gaps.
bool is_contiguous(const Dims& shape, const Dims& strides);

}  // namespace rankflow
