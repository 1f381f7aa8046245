#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace kb {

void fatal(const std::string& message) {
  std::fprintf(stderr, "kbfleet: %s\n", message.c_str());
  std::abort();
}

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
