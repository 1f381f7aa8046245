// Helpers shared by the golden-model op files (ops.cpp, conv_pool_ops.cpp); not part of the
// ops' contract (ops.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/host_tensor.h"

// A violated shape precondition is a bug in the calling golden model (its spec was validated
// before any op runs), so it aborts with a message instead of returning a Status.
#define KB_CPU_CHECK(cond, message)                                                     \
  do {                                                                                  \
    if (!(cond)) ::kb::cpu::detail::check_failed(#cond, (message), __FILE__, __LINE__); \
  } while (false)

namespace kb::cpu::detail {

[[noreturn]] void check_failed(const char* expr, const std::string& message, const char* file,
                               int line);

template <typename T>
std::string shape_of(const HostTensor<T>& t) {
  return shape_to_string(t.shape);
}

inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a / b - ((a % b != 0 && a < 0) ? 1 : 0);
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

}  // namespace kb::cpu::detail
