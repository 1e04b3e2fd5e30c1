// Reduction kernels: element-wise sum/prod/min/max over every supported dtype, chosen once per
// collective call (a Reducer), vectorised by the compiler at -O3. f16 and bf16 are converted to
// f32 in registers; algorithms that see all inputs at once accumulate them in f32 and round once.
// Pure functions; any thread.
#pragma once

#include <cstddef>

#include "rankflow/types.h"

namespace rankflow::coll {

struct Reducer {
  DType dtype;
  ReduceOp op;
  size_t elem_size;  // bytes of one element of `dtype`
  size_t acc_size;   // bytes of one accumulator element (4 for f16/bf16, else elem_size)
  // acc[i] = in[i], converted to the accumulator type.
  void (*load)(void* acc, const void* in, size_t n);
  // acc[i] = acc[i] op in[i].
  void (*accumulate)(void* acc, const void* in, size_t n);
  // out[i] = acc[i], converted back (rounded) to dtype.
  void (*store)(void* out, const void* acc, size_t n);
  // inout[i] = inout[i] op in[i], both dtype (one rounding per call for f16/bf16).
  void (*combine)(void* inout, const void* in, size_t n);
  // out[i] = a[i] op b[i], all dtype, in one pass; out may be a or b (element-wise aliasing).
  void (*reduce2)(void* out, const void* a, const void* b, size_t n);
};

// The reduction kernel every mesh algorithm shares: acc = input(0) op input(1) op ... op
// input(members - 1), `count` elements in the accumulator type. `input(p)` returns member p's
// elements; it is called once per member, in order, right before they are read.
template <typename Input>
void accumulate_inputs(const Reducer& r, void* acc, size_t count, int members, Input&& input) {
  r.load(acc, input(0), count);
  for (int p = 1; p < members; ++p)
    r.accumulate(acc, input(p), count);
}

// Throws InvalidArgument for a combination rankflow does not support.
const Reducer& reducer(DType dtype, ReduceOp op);

// f16/bf16 conversions, exposed for tests and reference results.
float half_to_float(unsigned short bits);
unsigned short float_to_half(float value);
float bf16_to_float(unsigned short bits);
unsigned short float_to_bf16(float value);

}  // namespace rankflow::coll
