// kbfleet's host-side error model: Status and Result<T>.
//
// Every host function that can fail for a reason the caller should handle returns a Status
// (no value) or a Result<T> (a value or an error). Expected outcomes ("no job", "not
// implemented") are values, not errors. Exceptions are used only at process boundaries
// (main functions catch and print) and by third-party libraries; code that calls such a library
// converts its exceptions to a Status at the call site.
//
// Thread safety: plain values; a const Status may be read from any thread.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kb {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong (a bad spec, a bad flag)
  kNotFound,         // a named thing does not exist (file, problem id, preset)
  kFailedPrecondition,
  kIoError,
  kInternal,
};

class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status invalid_argument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status not_found(std::string message) {
    return Status(StatusCode::kNotFound, std::move(message));
  }
  static Status failed_precondition(std::string message) {
    return Status(StatusCode::kFailedPrecondition, std::move(message));
  }
  static Status io_error(std::string message) {
    return Status(StatusCode::kIoError, std::move(message));
  }
  static Status internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>", or "ok".
  std::string to_string() const;

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value of type T, or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kb

// Evaluates a Status-returning expression and returns it from the caller when it is not ok.
#ifndef KB_TRY
#define KB_TRY(expr)                                     \
  do {                                                   \
    ::kb::Status kb_try_status_ = (expr);                \
    if (!kb_try_status_.is_ok()) return kb_try_status_;  \
  } while (0)
#endif
