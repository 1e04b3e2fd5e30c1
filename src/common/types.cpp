// Element types and reduction operators (rankflow/types.h): sizes and names.
#include "rankflow/types.h"

#include <string>

#include "rankflow/error.h"

namespace rankflow {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kI8:
    case DType::kU8: return 1;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16: return 2;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32: return 4;
    case DType::kF64:
    case DType::kI64:
    case DType::kU64: return 8;
  }
  throw InvalidArgument("unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kI8: return "i8";
    case DType::kI16: return "i16";
    case DType::kU8: return "u8";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kU64: return "u64";
  }
  return "?";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
  }
  return "?";
}

}  // namespace rankflow
