// Typed readers of a JSON object's fields, the one place where kbfleet turns a JSON value into a
// C++ value (protocol bodies, spooled results, stored JobResults):
//
//   KB_ASSIGN_OR_RETURN(int64_t job_id, json_fields::required<int64_t>(body, "job_id"));
//   KB_ASSIGN_OR_RETURN(std::string host, json_fields::optional<std::string>(body, "host", ""));
//   const std::string status = json_fields::value_or<std::string>(row, "status", "runtime_error");
//
//   required  the field must be present, not null, and of type T.
//   optional  absent or null gives the fallback; present with another type is an error: a sender
//             that writes a field wrongly has a bug worth reporting, not a default worth hiding.
//   value_or  absent, null or of another type gives the fallback (for best-effort reads, e.g. the
//             columns stored beside a JobResult, where a bad field must not fail the whole row).
//
// Types T: bool, int, int64_t, uint64_t, double, std::string, std::vector<std::string>,
// std::vector<double>, Object (a JSON object, returned as nlohmann::json) and nlohmann::json
// (any value). Integers are JSON integers within T's range (2.5 is not an int, -1 not a uint64_t);
// double is any JSON number. When `object` is not a JSON object, every field is absent.
//
// Errors are Status::invalid_argument naming the field and the expected type:
//   "field 'job_id': expected an integer (int64), got a string"
//   "field 'attempt': missing (expected an integer (int))"
//
// Text from a peer that may be hostile (a protocol body, a candidate's executor output) is parsed
// with parse_untrusted, which refuses nesting deeper than kMaxDepth before parsing: nlohmann
// copies and compares nested values recursively, and a 400 KB body nested ~100,000 deep ran a
// copy off the stack (the coordinator died of SIGSEGV in wire::decode).
//
// Thread safety: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "common/status.h"

namespace kb::json_fields {

// Selects "a JSON object" as T (the value comes back as nlohmann::json).
struct Object {};

template <typename T>
struct ValueOf {
  using type = T;
};
template <>
struct ValueOf<Object> {
  using type = nlohmann::json;
};
template <typename T>
using ValueOfT = typename ValueOf<T>::type;

template <typename T>
Result<ValueOfT<T>> required(const nlohmann::json& object, std::string_view name);

template <typename T>
Result<ValueOfT<T>> optional(const nlohmann::json& object, std::string_view name,
                             ValueOfT<T> fallback);

template <typename T>
ValueOfT<T> value_or(const nlohmann::json& object, std::string_view name, ValueOfT<T> fallback);

// "a string", "an integer (int64)", ...: what T is called in the errors above.
template <typename T>
std::string_view type_name();

// "a string", "a number", "an object", "null", ...: what a JSON value is, for error messages.
std::string_view kind_of(const nlohmann::json& value);

// Arrays and objects inside each other: kbfleet's own documents nest fewer than 10 deep.
inline constexpr int kMaxDepth = 64;

// The deepest nesting of arrays and objects in `text`, counted outside strings, up to `limit + 1`
// (it stops there). Does not check that `text` is JSON.
int nesting_depth(std::string_view text, int limit = kMaxDepth);

// `text` parsed, or a discarded value (is_discarded()) when it is not JSON or nests deeper than
// kMaxDepth. Never throws. A NUL character in a string or key (the escape \u0000) comes back as
// U+FFFD: PostgreSQL's text and jsonb cannot hold it, and a peer's NUL made every write of its
// message fail (retried as if the database were down).
nlohmann::json parse_untrusted(std::string_view text);

}  // namespace kb::json_fields
