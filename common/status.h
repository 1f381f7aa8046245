// kbfleet's host-side error model: Status and Result<T>.
//
// Every host function that can fail for a reason the caller should handle returns a Status
// (no value) or a Result<T> (a value or an error). Expected outcomes ("no job", "not
// implemented") are values, not errors. Exceptions are used only at process boundaries
// (main functions catch and print) and by third-party libraries; code that calls such a library
// converts its exceptions to a Status at the call site.
//
// Both are [[nodiscard]]: an error dropped on the floor is a compile error under KB_WERROR.
// Result::value() on an error is a bug in the caller; it aborts with the error's message
// (never undefined behaviour). KB_TRY / KB_ASSIGN_OR_RETURN pass an error up; kb::fatal is the
// one way to stop on a broken invariant.
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

class [[nodiscard]] Status {
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
// Prints "kbfleet: <message>" to stderr and aborts: for a broken invariant (a bug), never for an
// error the caller could handle.
[[noreturn]] void fatal(const std::string& message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return checked(*this); }
  const T& value() const& { return checked(*this); }
  T&& value() && { return std::move(checked(*this)); }
  T* operator->() { return &checked(*this); }
  const T* operator->() const { return &checked(*this); }

 private:
  template <typename Self>  // Result or const Result
  static auto& checked(Self& self) {
    if (!self.value_) fatal("Result::value() on an error: " + self.status_.to_string());
    return *self.value_;
  }

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

// `KB_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result's value, or returns the
// Result's Status from the caller (which returns Status or some Result<U>).
#define KB_STATUS_CONCAT_INNER_(a, b) a##b
#define KB_STATUS_CONCAT_(a, b) KB_STATUS_CONCAT_INNER_(a, b)
#define KB_ASSIGN_OR_RETURN(lhs, expr) \
  KB_ASSIGN_OR_RETURN_IMPL_(KB_STATUS_CONCAT_(kb_result_, __LINE__), lhs, expr)
#define KB_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                              \
  if (!result.is_ok()) return result.status();       \
  lhs = std::move(result).value()
