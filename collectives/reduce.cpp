// Reduction kernels (see reduce.h): one template instantiated per dtype and op.
#include "collectives/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "rankflow/error.h"

namespace rankflow {

namespace coll {

float half_to_float(unsigned short bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
unsigned short float_to_half(float value) {
  const _Float16 h = static_cast<_Float16>(value);
  unsigned short bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
float bf16_to_float(unsigned short bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}
unsigned short float_to_bf16(float value) {
  uint32_t wide;
  std::memcpy(&wide, &value, 4);
  if ((wide & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((wide >> 16) | 0x40);
  wide += 0x7fffu + ((wide >> 16) & 1);  // round to nearest even
  return static_cast<unsigned short>(wide >> 16);
}

namespace {

struct F16 {
  unsigned short bits;
};
struct BF16 {
  unsigned short bits;
};

// How one dtype maps to its accumulator type.
template <typename T>
struct Traits {
  using Acc = T;
  static Acc to_acc(T v) { return v; }
  static T from_acc(Acc v) { return v; }
};
template <>
struct Traits<F16> {
  using Acc = float;
  static float to_acc(F16 v) { return half_to_float(v.bits); }
  static F16 from_acc(float v) { return {float_to_half(v)}; }
};
template <>
struct Traits<BF16> {
  using Acc = float;
  static float to_acc(BF16 v) { return bf16_to_float(v.bits); }
  static BF16 from_acc(float v) { return {float_to_bf16(v)}; }
};

template <ReduceOp Op, typename A>
inline A apply(A a, A b) {
  if constexpr (Op == ReduceOp::kSum) return a + b;
  if constexpr (Op == ReduceOp::kProd) return a * b;
  if constexpr (Op == ReduceOp::kMin) return std::min(a, b);
  if constexpr (Op == ReduceOp::kMax) return std::max(a, b);
}

// Every kernel is compiled for AVX-512, AVX2 and baseline x86-64, and the loader picks the best
// one the CPU has (GCC function multi-versioning). Not under ThreadSanitizer: the loader runs
// the clones' resolvers before the sanitizer's runtime is up, and the instrumented resolver
// crashes the program at start.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define RANKFLOW_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RANKFLOW_VECTOR_CLONES
#endif

template <typename T, ReduceOp Op>
struct Kernels {
  using Tr = Traits<T>;
  using Acc = typename Tr::Acc;
  RANKFLOW_VECTOR_CLONES static void load(void* acc, const void* in, size_t n) {
    Acc* __restrict a = static_cast<Acc*>(acc);
    const T* __restrict x = static_cast<const T*>(in);
    for (size_t i = 0; i < n; ++i)
      a[i] = Tr::to_acc(x[i]);
  }
  RANKFLOW_VECTOR_CLONES static void accumulate(void* acc, const void* in, size_t n) {
    Acc* __restrict a = static_cast<Acc*>(acc);
    const T* __restrict x = static_cast<const T*>(in);
    for (size_t i = 0; i < n; ++i)
      a[i] = apply<Op, Acc>(a[i], Tr::to_acc(x[i]));
  }
  RANKFLOW_VECTOR_CLONES static void store(void* out, const void* acc, size_t n) {
    T* __restrict o = static_cast<T*>(out);
    const Acc* __restrict a = static_cast<const Acc*>(acc);
    for (size_t i = 0; i < n; ++i)
      o[i] = Tr::from_acc(a[i]);
  }
  RANKFLOW_VECTOR_CLONES static void combine(void* inout, const void* in, size_t n) {
    T* __restrict o = static_cast<T*>(inout);
    const T* __restrict x = static_cast<const T*>(in);
    for (size_t i = 0; i < n; ++i)
      o[i] = Tr::from_acc(apply<Op, Acc>(Tr::to_acc(o[i]), Tr::to_acc(x[i])));
  }
  RANKFLOW_VECTOR_CLONES static void reduce2_distinct(void* out, const void* a, const void* b,
                                                      size_t n) {
    T* __restrict o = static_cast<T*>(out);
    const T* __restrict x = static_cast<const T*>(a);
    const T* __restrict y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) {
      o[i] = Tr::from_acc(apply<Op, Acc>(Tr::to_acc(x[i]), Tr::to_acc(y[i])));
    }
  }
  // The ops are commutative, so an output that is one of the inputs folds in the other.
  static void reduce2(void* out, const void* a, const void* b, size_t n) {
    if (out == a) return combine(out, b, n);
    if (out == b) return combine(out, a, n);
    reduce2_distinct(out, a, b, n);
  }
  static Reducer make(DType dtype) {
    return {dtype, Op, sizeof(T), sizeof(Acc), &load, &accumulate, &store, &combine, &reduce2};
  }
};

template <typename T>
const Reducer* for_op(DType dtype, ReduceOp op) {
  static const Reducer table[] = {
      Kernels<T, ReduceOp::kSum>::make(dtype), Kernels<T, ReduceOp::kProd>::make(dtype),
      Kernels<T, ReduceOp::kMin>::make(dtype), Kernels<T, ReduceOp::kMax>::make(dtype)};
  return &table[static_cast<int>(op)];
}

}  // namespace

const Reducer& reducer(DType dtype, ReduceOp op) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::kMax)) {
    throw InvalidArgument("unknown reduction op " + std::to_string(static_cast<int>(op)) +
                          "; valid ops are sum, prod, min, max");
  }
  switch (dtype) {
    case DType::kF32: return *for_op<float>(dtype, op);
    case DType::kF64: return *for_op<double>(dtype, op);
    case DType::kF16: return *for_op<F16>(dtype, op);
    case DType::kBF16: return *for_op<BF16>(dtype, op);
    case DType::kI32: return *for_op<int32_t>(dtype, op);
    case DType::kI64: return *for_op<int64_t>(dtype, op);
    default: break;
  }
  const std::string_view name = to_string(dtype);  // "?" for a value that is no DType
  throw InvalidArgument(
      "collectives do not reduce dtype " +
      (name == "?" ? std::to_string(static_cast<int>(dtype)) : std::string(name)) +
      "; valid dtypes are f32, f64, f16, bf16, i32, i64");
}

}  // namespace coll
}  // namespace rankflow
