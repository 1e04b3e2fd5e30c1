// HostBuffer, the public handle of a persistent host buffer (see rankflow/host_buffer.h).
// Host main thread.
#include "runtime/host_buffer.h"

#include <string>

#include "rankflow/error.h"
#include "runtime/tensor_access.h"

namespace rankflow {

const detail::HostBufferState& HostBuffer::on_host(const char* operation) const {
  const std::string what = std::string("HostBuffer::") + operation;
  if (!state_) throw InvalidState(what + ": an empty handle (use Worker::create_buffer)");
  if (!state_->on_host) {
    throw InvalidState(what + ": a host buffer's memory lives on the host (rank 0); this rank " +
                       "is a chip worker");
  }
  if (state_->closed) throw InvalidState(what + ": the worker was closed, and its memory with it");
  if (state_->released) throw InvalidState(what + ": the buffer was released");
  return *state_;
}

size_t HostBuffer::bytes() const {
  return state_ ? state_->bytes : 0;
}

std::byte* HostBuffer::data() const {
  return detail::TensorAccess::data(on_host("data").whole);
}

Tensor HostBuffer::tensor(std::vector<size_t> shape, DType dtype, size_t byte_offset,
                          std::vector<size_t> strides) const {
  const detail::HostBufferState& s = on_host("tensor");
  Tensor typed = detail::TensorAccess::make(
      detail::TensorAccess::buffer(s.whole), detail::TensorAccess::offset(s.whole), s.bytes,
      {s.bytes / dtype_size(dtype)}, dtype, detail::TensorAccess::data(s.whole), -1);
  return typed.view(Dims(shape), Dims(strides), byte_offset);
}

bool HostBuffer::released() const {
  return state_ && state_->released;
}

}  // namespace rankflow
