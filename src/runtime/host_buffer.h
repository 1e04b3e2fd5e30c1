// HostBufferState: the runtime's record of a persistent host buffer (rankflow/host_buffer.h),
// shared by every copy of its HostBuffer handle. Made and released by the host's scheduler on
// the main thread; read by the handle's accessors on the same thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rankflow/host_buffer.h"
#include "rankflow/tensor.h"

namespace rankflow::detail {

struct HostBufferState {
  Tensor whole;  // a 1-D u8 tensor over the buffer (empty on a chip rank)
  size_t bytes = 0;
  bool on_host = false;
  bool released = false;
  bool closed = false;  // the worker closed: its memory is gone

  static HostBuffer handle(std::shared_ptr<HostBufferState> state) {
    return HostBuffer(std::move(state));
  }
  static const std::shared_ptr<HostBufferState>& of(const HostBuffer& b) { return b.state_; }
};

}  // namespace rankflow::detail
