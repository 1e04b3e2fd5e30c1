// Error: code names and the message prefix shared by every rankflow exception.
#include "rankflow/error.h"

namespace rankflow {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kOutOfBounds: return "out of bounds";
    case ErrorCode::kTransport: return "transport failure";
    case ErrorCode::kRemoteFailure: return "remote failure";
    case ErrorCode::kInvalidState: return "invalid state";
  }
  return "unknown error";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error("rankflow " + std::string(to_string(code)) + ": " + message),
      code_(code) {}

}  // namespace rankflow
