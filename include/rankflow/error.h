// rankflow/error.h: the exception types every rankflow API throws.
//
// All errors derive from rankflow::Error, which carries an ErrorCode so callers can either catch a
// specific subclass (Timeout, OutOfBounds, ...) or switch on code(). Messages name what was wrong
// (rank, operation, peer, offsets) so that a user can act on them without a debugger.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace rankflow {

enum class ErrorCode {
  kInvalidArgument,  // the caller passed something rankflow cannot accept
  kTimeout,          // a blocking wait exceeded its deadline
  kOutOfBounds,      // a remote access fell outside the target's window
  kTransport,        // MPI, UCX or hwloc reported a failure
  kRemoteFailure,    // a peer rank failed and this rank cannot continue
  kInvalidState,     // the object is not in a state that allows the call (closed, not initialised)
};

std::string_view to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& m) : Error(ErrorCode::kInvalidArgument, m) {}
};

class Timeout : public Error {
 public:
  explicit Timeout(const std::string& m) : Error(ErrorCode::kTimeout, m) {}
};

class OutOfBounds : public Error {
 public:
  explicit OutOfBounds(const std::string& m) : Error(ErrorCode::kOutOfBounds, m) {}
};

class TransportError : public Error {
 public:
  explicit TransportError(const std::string& m) : Error(ErrorCode::kTransport, m) {}
};

class RemoteFailure : public Error {
 public:
  explicit RemoteFailure(const std::string& m) : Error(ErrorCode::kRemoteFailure, m) {}
};

class InvalidState : public Error {
 public:
  explicit InvalidState(const std::string& m) : Error(ErrorCode::kInvalidState, m) {}
};

}  // namespace rankflow
