// rankflow/types.h: element types and reduction operators shared by collectives and tensors.
#pragma once

#include <cstddef>
#include <string_view>

namespace rankflow {

// Collectives reduce f32, f64, f16, bf16, i32 and i64; tensors of the DAG runtime take all.
enum class DType { kF32, kF64, kF16, kBF16, kI32, kI64, kI8, kI16, kU8, kU16, kU32, kU64 };
enum class ReduceOp { kSum, kProd, kMin, kMax };

size_t dtype_size(DType dtype);
std::string_view to_string(DType dtype);
std::string_view to_string(ReduceOp op);

}  // namespace rankflow
