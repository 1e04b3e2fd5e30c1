// The checks of a decoded task's arguments against their arenas (see chip_args.h). Pure
// functions; the chip's main thread calls them for every task.
#include "runtime/chip_args.h"

#include <string>

#include "rankflow/error.h"

namespace rankflow::runtime {

bool elements_match(const DecodedArg& a) {
  const ArgRecord& r = a.record;
  uint64_t elements = r.ndim > 0 ? 1 : 0;
  uint64_t last = 0;  // index of the last element, in elements
  for (uint32_t d = 0; d < r.ndim; ++d) {
    uint64_t step = 0;
    if (__builtin_mul_overflow(elements, a.shape[d], &elements)) return false;
    if (a.shape[d] == 0) continue;
    if (__builtin_mul_overflow(a.shape[d] - 1, a.strides[d], &step)) return false;
    if (__builtin_add_overflow(last, step, &last)) return false;
  }
  uint64_t bytes = 0, reach = 0;
  if (__builtin_mul_overflow(elements, r.element_bytes, &bytes) || bytes != r.bytes) return false;
  if (elements == 0) return true;
  uint64_t count = 0;  // elements from the first to the last, inclusive
  if (__builtin_add_overflow(last, 1, &count)) return false;
  return !__builtin_mul_overflow(count, r.element_bytes, &reach) && reach <= r.extent;
}

void check_arg(size_t i, const DecodedArg& a, const char* buffer, size_t size) {
  const ArgRecord& r = a.record;
  if (r.offset > size || r.extent > size - r.offset || r.bytes > r.extent) {
    throw TransportError("argument " + std::to_string(i) + " names bytes [" +
                         std::to_string(r.offset) + ", +" + std::to_string(r.extent) +
                         ") outside the " + buffer + " of " + std::to_string(size) + " bytes");
  }
  if (!elements_match(a)) {
    throw TransportError("argument " + std::to_string(i) +
                         "'s shape and strides do not match its " + std::to_string(r.bytes) +
                         " bytes and extent of " + std::to_string(r.extent));
  }
}

}  // namespace rankflow::runtime
