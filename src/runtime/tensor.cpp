// Tensor views: shapes, strides and the bounds of the allocation they lie in. Host-side values,
// used by the orchestration body on the host's main thread.
#include <cstdint>
#include <string>

#include "rankflow/error.h"
#include "rankflow/tensor.h"
#include "runtime/protocol.h"

namespace rankflow {
namespace {

std::string dims(const Dims& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// Whether a view of `shape` and `strides` (both positive) spans at most `limit` bytes from its
// first element, its element count and byte sizes all within size_t (no wrap-around).
bool fits(const Dims& shape, const Dims& strides, size_t element_bytes, size_t limit) {
  size_t elements = 1, last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return true;  // no elements: nothing to reach
    size_t step = 0;
    if (__builtin_mul_overflow(elements, shape[d], &elements) ||
        __builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return false;
    }
  }
  size_t bytes = 0, extent = 0;
  if (last == SIZE_MAX || __builtin_mul_overflow(elements, element_bytes, &bytes) ||
      __builtin_mul_overflow(last + 1, element_bytes, &extent)) {
    return false;
  }
  return extent <= limit;
}

}  // namespace

namespace detail {
void throw_too_many_dims(size_t n) {
  throw InvalidArgument("a tensor has 1 to " + std::to_string(Dims::kMax) + " dimensions (got " +
                        std::to_string(n) + ")");
}
}  // namespace detail

Dims contiguous_strides(const Dims& shape) {
  Dims strides = Dims::filled(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

size_t Tensor::elements() const {
  size_t n = shape_.empty() ? 0 : 1;
  for (size_t d : shape_)
    n *= d;
  return n;
}

size_t Tensor::extent_bytes() const {
  if (elements() == 0) return 0;
  size_t last = 0;
  for (size_t d = 0; d < shape_.size(); ++d)
    last += (shape_[d] - 1) * strides_[d];
  return (last + 1) * dtype_size(dtype_);
}

bool is_contiguous(const Dims& shape, const Dims& strides) {
  if (strides.empty()) return true;
  size_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool Tensor::contiguous() const {
  return is_contiguous(shape_, strides_);
}

void Tensor::check_host_span(size_t element_bytes, bool contiguous_span) const {
  if (buffer_ == 0) throw InvalidArgument("Tensor::host: an empty tensor (it names no memory)");
  if (home_ >= 0 || data_ == nullptr) {
    throw InvalidArgument("Tensor::host: not host memory (child memory lives on chip worker " +
                          std::to_string(home_) + "; copy it back with copy_from)");
  }
  if (element_bytes != dtype_size(dtype_)) {
    throw InvalidArgument("Tensor::host: element type of " + std::to_string(element_bytes) +
                          " bytes for a " + std::string(to_string(dtype_)) + " tensor");
  }
  if (contiguous_span && !contiguous()) {
    throw InvalidArgument("Tensor::host: a strided view (shape " + dims(shape_) + ", strides " +
                          dims(strides_) + "); read it with host_view<T>()");
  }
}

Tensor Tensor::view(Dims shape, Dims strides, size_t byte_offset) const {
  // Built only on the way to an error: views are on the hot path of every sliced submit.
  auto describe = [&](const Dims& sh, const Dims& st) {
    return "Tensor::view(shape " + dims(sh) + ", strides " + dims(st) + ", byte offset " +
           std::to_string(byte_offset) + ")";
  };
  auto what = [&] { return describe(shape, strides); };
  if (buffer_ == 0) throw InvalidArgument(what() + ": of an empty tensor");
  if (shape.empty() || shape.size() > runtime::kMaxDims) {
    throw InvalidArgument(what() + ": a view has 1 to " + std::to_string(runtime::kMaxDims) +
                          " dimensions");
  }
  if (strides.empty()) strides = contiguous_strides(shape);
  if (strides.size() != shape.size()) {
    throw InvalidArgument(what() + ": one stride per dimension");
  }
  for (size_t s : strides) {
    if (s == 0) throw InvalidArgument(what() + ": strides must be positive");
  }
  if (byte_offset % dtype_size(dtype_) != 0) {
    throw InvalidArgument(what() + ": the offset is not a multiple of the element size (" +
                          std::to_string(dtype_size(dtype_)) + " bytes)");
  }
  Tensor v = *this;
  v.shape_ = shape;
  v.strides_ = strides;
  if (byte_offset > alloc_end_ - offset_ ||
      !fits(shape, strides, dtype_size(dtype_), alloc_end_ - offset_ - byte_offset)) {
    throw InvalidArgument(describe(v.shape_, v.strides_) + ": reaches outside its allocation of " +
                          std::to_string(alloc_end_ - alloc_begin_) + " bytes");
  }
  v.offset_ = offset_ + byte_offset;
  if (v.data_ != nullptr) v.data_ += byte_offset;
  return v;
}

Tensor Tensor::slice(size_t dim, size_t begin, size_t end) const {
  if (dim >= shape_.size() || begin > end || end > shape_[dim]) {
    throw InvalidArgument("Tensor::slice(" + std::to_string(dim) + ", " + std::to_string(begin) +
                          ", " + std::to_string(end) + "): outside a tensor of shape " +
                          dims(shape_));
  }
  Dims shape = shape_;
  shape[dim] = end - begin;
  return view(shape, strides_, begin * strides_[dim] * dtype_size(dtype_));
}

}  // namespace rankflow
