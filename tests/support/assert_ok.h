// KB_ASSERT_OK / KB_EXPECT_OK: a Status or Result<T> expression must be ok; on failure the test
// output shows the error (code and message), not just "false".
#pragma once

#include <gtest/gtest.h>

#include "common/status.h"

namespace kb::test {

inline const Status& status_of(const Status& s) {
  return s;
}
template <typename T>
const Status& status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace kb::test

#define KB_ASSERT_OK(expr)                                                          \
  do {                                                                              \
    const auto& kb_assert_ok_value_ = (expr);                                       \
    ASSERT_TRUE(kb_assert_ok_value_.is_ok())                                        \
        << #expr << ": " << ::kb::test::status_of(kb_assert_ok_value_).to_string(); \
  } while (0)

#define KB_EXPECT_OK(expr)                                                          \
  do {                                                                              \
    const auto& kb_expect_ok_value_ = (expr);                                       \
    EXPECT_TRUE(kb_expect_ok_value_.is_ok())                                        \
        << #expr << ": " << ::kb::test::status_of(kb_expect_ok_value_).to_string(); \
  } while (0)
