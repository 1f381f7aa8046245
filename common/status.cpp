#include "common/status.h"

namespace kb {

std::string Status::to_string() const {
  switch (code_) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument: " + message_;
    case StatusCode::kNotFound: return "not found: " + message_;
    case StatusCode::kFailedPrecondition: return "failed precondition: " + message_;
    case StatusCode::kIoError: return "I/O error: " + message_;
    case StatusCode::kInternal: return "internal error: " + message_;
  }
  return message_;
}

}  // namespace kb
