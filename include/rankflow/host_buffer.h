// rankflow/host_buffer.h: persistent host buffers of the DAG runtime.
//
// Worker::create_buffer(bytes) gives a zero-filled host buffer owned by the worker and valid
// across runs until Worker::release_buffer. The host reads and writes it in place between runs
// (data(), as<T>()), and tasks name views of it as tensors (tensor()), so a program that keeps
// its working set across runs copies nothing per run:
//
//   rankflow::HostBuffer weights = worker.create_buffer(64 << 20);   // every rank
//   if (worker.is_host()) load(weights.as<float>());                  // in place, once
//   for (int step = 0; step < steps; ++step) {
//     worker.run([&](rankflow::Orchestrator& orch) {
//       orch.submit(use, {rankflow::in(weights.tensor<float>({16 << 20}))}, 0);
//     });
//   }
//   worker.release_buffer(weights);
//
// Dependencies on a buffer's views are inferred as for any tensor. The memory comes out of the
// host arena (WorkerOptions::host_arena_bytes). On a chip rank the handle names nothing: its
// memory lives on the host, and data() or tensor() there are InvalidState.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rankflow/tensor.h"

namespace rankflow {

namespace detail {
struct HostBufferState;  // the runtime's record of a buffer
}  // namespace detail

class HostBuffer {
 public:
  HostBuffer() = default;
  size_t bytes() const;
  // The buffer's memory on the host (InvalidState after release, on a chip, or for an empty
  // handle). Between runs, or in the body for bytes no unfinished task writes.
  std::byte* data() const;
  template <typename T>
  std::span<T> as() const {
    return {reinterpret_cast<T*>(data()), bytes() / sizeof(T)};
  }
  // A view of the buffer as a tensor: `shape` elements of `dtype` from `byte_offset`, with
  // `strides` in elements (empty: row-major). InvalidArgument when it reaches outside the
  // buffer, InvalidState as data().
  Tensor tensor(std::vector<size_t> shape, DType dtype, size_t byte_offset = 0,
                std::vector<size_t> strides = {}) const;
  template <typename T>
  Tensor tensor(std::vector<size_t> shape, size_t byte_offset = 0) const;
  bool released() const;

 private:
  friend struct detail::HostBufferState;
  explicit HostBuffer(std::shared_ptr<detail::HostBufferState> state) : state_(std::move(state)) {}
  const detail::HostBufferState& on_host(const char* operation) const;
  std::shared_ptr<detail::HostBufferState> state_;
};

}  // namespace rankflow
