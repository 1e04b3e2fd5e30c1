// rankflow/types.h: element types and reduction operators shared by collectives and tensors.
#pragma once

#include <cstddef>
#include <string_view>

namespace rankflow {

enum class DType { kF32, kF64, kF16, kBF16, kI32, kI64 };
enum class ReduceOp { kSum, kProd, kMin, kMax };

size_t dtype_size(DType dtype);
std::string_view to_string(DType dtype);
std::string_view to_string(ReduceOp op);

}  // namespace rankflow
