// Where a job runs: the CUDA device (a GPU) or the CPU device (small presets, labelled `cpu`).
//
// The executor (executor.h) holds the policy — correctness trials, what to compare, the A B B A
// timing rounds and when to stop — and drives an ExecutionDevice, which holds the mechanics:
// buffers, input generation, running a pack variant, timing one call (with a cold L2 on the GPU),
// hashing inputs and outputs, a private copy of the reference output, tracing the launches of
// every call, reading clocks.
//
// Two slots hold the two implementations being compared: kReference and kCustom. Input sets are
// numbered from 0; the executor decides how many to rotate among (max_input_sets()) and
// regenerates a set's contents before every timed pair of calls.
//
// Two packs (docs/design.md#kernel-packs): the reference slot's variant is created from
// the trusted reference pack, the custom slot's from the candidate pack; a candidate that exports
// a reference variant is never asked for it.
//
// Ownership: a device owns its buffers and pack instances; it borrows both KernelPacks.
// Thread safety: one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/physical_floor.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "common/tensor_generator.h"
#include "executor/kernel_pack.h"
#include "executor/verification.h"

namespace kb {

enum class Slot { kReference = 0, kCustom = 1 };

// What the pack said when asked for a variant.
struct CreateOutcome {
  int32_t code = KB_PACK_OK;  // kb_pack_status_v1
  std::string message;
};

// The GPU work of one call of a pack variant (one run() or run_timed() inside a trace), from
// device-side activity records attributed to the call through the launching API call's
// correlation id.
struct CallTrace {
  Slot slot = Slot::kCustom;
  int own_kernels = 0;      // kernels of kbfleet's own code (namespace kb, not kb::eager)
  int library_kernels = 0;  // everything else: cuDNN, cuBLAS, our eager ops, ...
  double own_gpu_ms = 0;    // GPU time of the own kernels
  double total_gpu_ms = 0;  // GPU time of every kernel, copy and memset of the call
  // The time at least one of the call's activities ran (the union of their intervals): what the
  // call's events span at least, with overlapping kernels (programmatic dependent launch) counted
  // once and the gaps where the GPU waited for the host's launches left out.
  double busy_ms = 0;
  // Activities of the call that ran on a stream other than the job stream (the legacy and
  // per-thread default streams included) or ended after the call's last job-stream work, each
  // named: "kernel kb::side_kernel on stream 13 (job stream 7)".
  std::vector<std::string> foreign;
  std::vector<std::string> kernel_names;  // the first few, for the result
};

// Everything launched between begin_trace() and end_trace().
struct LaunchTrace {
  bool available = false;        // false where tracing is not possible (CPU device, no CUPTI)
  std::vector<CallTrace> calls;  // one per run()/run_timed() in the window, in call order
  // Activities no call of the executor thread launched: launched by another host thread (a
  // thread a variant left behind, a host callback), or not attributable to any API call. Named.
  std::vector<std::string> stray;
};

// One timed call: its milliseconds, or a void sample. Void: the call waited on its own stream
// while the device's timing gate held that stream (cuda_device.cpp: a synchronizing API inside
// run()), so its time includes the gate's timeout; the device times without the gate from then
// on. The caller takes the sample again on fresh contents: the same contents again would let the
// call reuse what its first run left behind (its output, a memo of its inputs).
// host_ms: the host's time inside run() (the CPU device: the call itself). The gate hides it from
// ms, so a call that issues slowly (many launches, host work before its launches) is reported
// apart: the executor's environment.host_issue_ms.
// late_work: a call after which work was still queued on the job stream (for a custom, once its
// output had been taken at the stop event for the checks that follow): work queued from another
// host thread after run() returned, which the events did not time, or queued behind the
// reference's call to slow the next one. The executor fails the job (foreign_stream).
struct TimedCall {
  double ms = 0;
  bool void_sample = false;
  double host_ms = 0;
  bool late_work = false;
};

class ExecutionDevice {
 public:
  virtual ~ExecutionDevice() = default;

  virtual std::string kind() const = 0;  // "cuda" or "cpu"
  virtual nlohmann::json environment() const = 0;
  // The variant the pack runs for each slot on this device (GPU: reference/custom; CPU:
  // golden/fp32).
  virtual int32_t pack_variant(Slot slot) const = 0;
  // How many input sets fit for timing rotation, given one set's size in bytes.
  virtual int max_input_sets(double set_bytes) const = 0;

  virtual CreateOutcome create(Slot slot, int32_t variant, const ProblemInstance& problem,
                               const std::string& spec_yaml) = 0;
  // Allocates input set `set` (inputs and parameters) when new, and fills it from `key`.
  virtual Status generate(int set, const ProblemInstance& problem, GeneratorKey key) = 0;
  // Allocates input set `set` when new and fills it from host tensors, the spec's inputs and
  // parameters taken by name: the lint (executor/reference_lint.h) runs the reference on sets it
  // changed on the host (one tensor redrawn, operands rounded to TF32).
  virtual Status upload(int set, const ProblemInstance& problem, const TensorSet& tensors) = 0;
  // Runs the slot's variant on input set `set` into the slot's output buffer.
  virtual Status run(Slot slot, int set) = 0;
  // Like run(), timed: GPU: L2 flushed first, events around the call (TimedCall). A timed custom
  // call's output is judged as it stood when the call ended: until the custom's next call,
  // read_output(kCustom) and the compares read a copy taken then (the CUDA device; elsewhere the
  // output cannot change after the call).
  virtual Result<TimedCall> run_timed(Slot slot, int set) = 0;
  virtual Status synchronize() = 0;

  // Fills the slot's output with NaN, so that an unwritten element cannot pass.
  virtual Status poison_output(Slot slot) = 0;
  virtual Result<std::vector<float>> read_output(Slot slot) = 0;
  // The custom output against the reference output under verification.h's rule. This default
  // reads both to the host; the CUDA device compares on the GPU (a 1 GB output pair: seconds on
  // the host, milliseconds there).
  virtual Result<ErrorStats> compare_slots(const Tolerance& tolerance) {
    Result<std::vector<float>> ref = read_output(Slot::kReference);
    if (!ref.is_ok()) return ref.status();
    Result<std::vector<float>> custom = read_output(Slot::kCustom);
    if (!custom.is_ok()) return custom.status();
    return compare_outputs(ref->data(), custom->data(), static_cast<int64_t>(ref->size()),
                           tolerance);
  }
  // A hash over every input and parameter of set `set`, keyed by `salt`. The executor draws a salt
  // per check from the job's timing secret and hashes before and after the custom call with it: a
  // custom cannot craft a change of its inputs that keeps a hash keyed by what it does not know.
  virtual Result<uint64_t> input_hash(int set, uint64_t salt) = 0;
  // A hash over the slot's output buffer, keyed like input_hash (the timing checks hash the
  // reference output around every custom call: a custom that writes there is caught).
  virtual Result<uint64_t> output_hash(Slot slot, uint64_t salt) = 0;
  // Copies the reference output into a private buffer no variant is ever given, then poisons the
  // reference slot: the custom call that follows can neither read the reference's answer nor
  // change the copy it is judged against.
  virtual Status stash_reference() = 0;
  virtual Result<std::vector<float>> read_stash() = 0;
  // The custom output against the stashed reference output (same rule as compare_slots).
  virtual Result<ErrorStats> compare_with_stash(const Tolerance& tolerance) {
    Result<std::vector<float>> ref = read_stash();
    if (!ref.is_ok()) return ref.status();
    Result<std::vector<float>> custom = read_output(Slot::kCustom);
    if (!custom.is_ok()) return custom.status();
    return compare_outputs(ref->data(), custom->data(), static_cast<int64_t>(ref->size()),
                           tolerance);
  }

  // Traces everything launched between begin_trace() and end_trace() (which synchronizes),
  // attributing each activity to the run()/run_timed() call during which it was launched.
  virtual Status begin_trace() = 0;
  virtual Result<LaunchTrace> end_trace() = 0;

  // Clock sampling during timing: call sample_clocks() now and then; clock_report() says the
  // range seen and whether the device throttled.
  virtual void sample_clocks() = 0;
  virtual nlohmann::json clock_report() const = 0;
  // Peak rates for the fp32 roofline figure: fp32 FMA FLOP/s and DRAM bytes/s (measured or
  // nominal, with where they came from in environment()).
  virtual double peak_flops() const = 0;
  virtual double peak_bytes_per_s() const = 0;
  // The hard physical floor's rates (common/physical_floor.h): the nominal peak DRAM bandwidth
  // and the fastest math a variant may use (3xTF32 on tensor cores). 0: no floor (CPU device).
  virtual PhysicalPeaks floor_peaks() const = 0;

  // A device that runs the pack's golden model (KB_VARIANT_CPU_GOLDEN) for the robustness trials
  // (executor/robustness_trials.h); nullptr where there is none to compare against (this default,
  // and the CPU device, whose reference already is the golden model).
  virtual std::unique_ptr<ExecutionDevice> make_golden_device() const { return nullptr; }
};

std::unique_ptr<ExecutionDevice> make_cpu_device(const KernelPack& reference,
                                                 const KernelPack& candidate);
// Fails when CUDA is not built in or GPU `ordinal` does not exist.
Result<std::unique_ptr<ExecutionDevice>> make_cuda_device(const KernelPack& reference,
                                                          const KernelPack& candidate, int ordinal);
// The "pack" entry of environment(): path, sha256, commit and build of a loaded pack.
nlohmann::json pack_environment(const KernelPack& pack);

}  // namespace kb
