// A paced CPU candidate pack (see CMakeLists.txt here): kernels/pack.cpp's honest table (renamed
// kb_pack_v1_honest) whose custom (`cpu_fp32`) run() computes the honest output and then returns
// KB_PACED_US microseconds after it was called. The custom's time is then the pace whatever the
// machine's load: it sleeps to kSpin before the due time and spins the rest, so that the
// scheduler's wake-up latency does not land in the sample. What is left is preemption on a
// saturated machine (a median of up to 6 ms measured at a load of 10 on 2 cores), hence a long
// pace: 250 ms, so that the noise stays well inside the 1% between a 4% slowdown and the gate's 3%.
// The CI gate's test builds two of these packs 4% apart and so records a known slowdown through
// real workers.
#include <chrono>
#include <thread>

#include "tests/support/wrapped_pack.h"

#ifndef KB_PACED_US
#error "KB_PACED_US must be the custom variant's time per call in microseconds"
#endif

namespace {

constexpr auto kSpin = std::chrono::milliseconds(2);

int32_t paced_run(kb_instance_v1* inst, const kb_tensor_v1* inputs, int32_t num_inputs,
                  const kb_tensor_v1* params, int32_t num_params, const kb_tensor_v1* output,
                  void* stream, char* error, size_t error_len) {
  const auto due = std::chrono::steady_clock::now() + std::chrono::microseconds(KB_PACED_US);
  const int32_t code = kb::testing::honest_pack().run(inst, inputs, num_inputs, params, num_params,
                                                      output, stream, error, error_len);
  std::this_thread::sleep_until(due - kSpin);
  while (std::chrono::steady_clock::now() < due) {
  }
  return code;
}

kb_pack_v1_t make_table() {
  kb_pack_v1_t table = kb::testing::honest_pack();
  table.run = &paced_run;
  return table;
}

}  // namespace

KB_WRAPPED_PACK_ENTRY(make_table)
