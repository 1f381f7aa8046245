// The two ends of a test pack that wraps kernels/pack.cpp's honest table (tests/faulty_cpu_pack,
// tests/paced_cpu_pack): such a pack compiles pack.cpp with `kb_pack_v1=kb_pack_v1_honest` on
// its command line, changes some entries of honest_pack()'s table, and exports the result:
//
//   kb_pack_v1_t make_table() { kb_pack_v1_t t = kb::testing::honest_pack(); t.run = &my_run;
//   return t; } KB_WRAPPED_PACK_ENTRY(make_table)   // at namespace scope, outside any namespace
//
// Thread safety: the table is built once, on the first kb_pack_v1() call (a function-local static).
#pragma once

#include "kernels/pack_abi.h"

namespace kb::testing {

inline const kb_pack_v1_t& honest_pack() {
  return *kb_pack_v1_honest();
}

}  // namespace kb::testing

// The wrapped pack's own entry point (the command line renamed pack.cpp's).
#undef kb_pack_v1
#define KB_WRAPPED_PACK_ENTRY(make_table)                                                  \
  extern "C" __attribute__((visibility("default"))) const kb_pack_v1_t* kb_pack_v1(void) { \
    static const kb_pack_v1_t kTable = make_table();                                       \
    return &kTable;                                                                        \
  }
