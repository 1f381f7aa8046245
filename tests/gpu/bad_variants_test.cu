// The executor catches each kind of dishonest or broken custom variant with the right verdict,
// every time: every bad variant of the test pack kbpack_bad_variants (tests/bad_variants/) runs as
// a real job (kb::execute_job on the CUDA device, small preset, three run seeds) and must get its
// one expected status, with the figures that show why. Controls: the pack's honest variants
// (honest_ballast: the reference plus our own ballast; own_kl_div: our own kernels only) get ok; so
// does every reference of the pack timed against itself (A/A).
//
// The variants of issue 12 play their tricks only after the trials (kUntimedCalls in
// bad_common.h), against the old executor's blind spots; the statuses asserted for them are those
// of the executor that issue 12 specifies (fresh contents, a poisoned output and a check around
// every timed call, launch accounting over every timed call, a private copy of the reference
// output). Each variant's file says its trick, why the old executor missed it and what catches it.
//
// Run on a GPU machine, from the build directory:
//   ./tests/gpu/kb_gpu_tests --gtest_filter='BadVariants*'
// (KB_BAD_PACK=/path/to/libkbpack_bad_variants.so when the build tree has moved.)
//
// Compiled only where the build passes KB_BAD_PACK_PATH (the pack's path) and links kb_executor
// (tests/gpu/CMakeLists.txt); elsewhere this file is empty.
#ifdef KB_BAD_PACK_PATH

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/job_result.h"
#include "common/spec_loader.h"
#include "executor/execution_device.h"
#include "executor/executor.h"
#include "executor/kernel_pack.h"
#include "executor/launch_tracer.h"

namespace kb {
namespace {

// Three run seeds: a verdict must not depend on the data.
constexpr uint64_t kSeeds[] = {1, 0x5eedbad0c0ffeeull, 0x9e3779b97f4a7c15ull};

const ProblemCatalog& catalog() {
  static const ProblemCatalog kCatalog = load_problem_catalog(default_problems_dir()).value();
  return kCatalog;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The pack: $KB_BAD_PACK when set (a build tree moved elsewhere), else the one built beside this
// test. It stays loaded for the whole process (never dlclose()d under the CUDA runtime's feet).
const KernelPack* bad_pack(std::string* error) {
  static Result<KernelPack>* const kPack = [] {
    const char* moved = std::getenv("KB_BAD_PACK");
    return new Result<KernelPack>(KernelPack::open(moved && *moved ? moved : KB_BAD_PACK_PATH));
  }();
  if (!kPack->is_ok()) {
    *error = kPack->status().message();
    return nullptr;
  }
  return &kPack->value();
}

// The trusted reference pack (kbref) that fills the reference slot: $KB_REF_PACK, else the one
// built beside this test; loaded once, like the bad pack.
const KernelPack* reference_pack(std::string* error) {
  static Result<KernelPack>* const kPack = [] {
    const char* moved = std::getenv("KB_REF_PACK");
    return new Result<KernelPack>(KernelPack::open(moved && *moved ? moved : KB_REF_PACK_PATH));
  }();
  if (!kPack->is_ok()) {
    *error = kPack->status().message();
    return nullptr;
  }
  return &kPack->value();
}

// Short jobs. At least 30 rounds, so that the tricks that start after kUntimedCalls calls are
// played in timed calls whatever the number of trials and warm-up calls before them.
ExecutorConfig quick_config() {
  ExecutorConfig c;
  c.correctness_trials = 3;
  c.warmup_ms = 20;
  c.max_input_sets = 2;
  c.stopping.time_cap_s = 0.5;
  c.stopping.min_rounds = 30;
  return c;
}

JobResult run_job(const KernelPack& pack, const std::string& id, uint64_t seed,
                  const ExecutorConfig& config) {
  JobResult failed;
  failed.status = JobStatus::kRuntimeError;
  std::string error;
  const KernelPack* reference = reference_pack(&error);
  if (!reference) {
    failed.message = "reference pack: " + error;
    return failed;
  }
  auto device = make_cuda_device(*reference, pack, 0);
  if (!device.is_ok()) {
    failed.message = "make_cuda_device: " + device.status().message();
    return failed;
  }
  JobRequest request;
  request.spec = catalog().problems.at(id);
  request.spec_yaml = read_text(request.spec->file);
  request.preset = "small";
  request.seed = seed;
  request.config = config;
  return execute_job(*device.value(), request);
}

Shape small_output_shape(const std::string& id) {
  return ProblemInstance::create(catalog().problems.at(id), "small").value().output_shape();
}

bool any_own_kernel(const JobResult& r) {
  for (const std::string& name : r.custom_kernels) {
    if (is_own_kernel_name(name.c_str())) return true;
  }
  return false;
}

// Beyond the status, what each trick leaves in the result (so that the expected status cannot come
// from an unrelated failure, e.g. a variant whose honest part is wrong).
void expect_library_kernels_only(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_FALSE(r.custom_kernels.empty()) << "the trace must have seen cuBLAS's kernel";
  EXPECT_FALSE(any_own_kernel(r));
}

void expect_own_kernel_elsewhere(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_TRUE(any_own_kernel(r)) << "the copy kernel on the side stream is ours";
}

void expect_tf32_sized_errors(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(r.errors.non_finite, 0);
  EXPECT_GT(r.errors.mismatches, 0);
  // TF32 operands give errors around 1e-3 here; a variant with wrong arithmetic would be off by
  // O(1).
  EXPECT_GT(r.errors.max_abs_error, 1e-4);
  EXPECT_LT(r.errors.max_abs_error, 5e-2);
}

void expect_clean_pass(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, quick_config().correctness_trials);
  EXPECT_EQ(r.errors.mismatches, 0);
  EXPECT_EQ(r.errors.non_finite, 0);
  EXPECT_GT(r.rounds, 0) << "timed, and checked again after timing";
}

// Honest work on the job stream alone: every timed call ran behind the timing gate
// (cuda_device.cpp), so the events timed the GPU and not the host's issuing.
void expect_clean_gated_pass(const JobResult& r) {
  expect_clean_pass(r);
  EXPECT_EQ(r.environment.value("timing_gate", ""), "on") << r.environment.dump();
}

// ---- The variants of issue 12 ----------------------------------------------------------------

// Right answers, with some library work beside an own kernel.
void expect_library_work_right(const JobResult& r) {
  EXPECT_EQ(r.errors.mismatches, 0);
  EXPECT_EQ(r.errors.non_finite, 0);
}

// Honest while the trials ran: caught in the timing phase.
void expect_caught_after_the_trials(const JobResult& r) {
  EXPECT_GE(r.correctness_trials, quick_config().correctness_trials)
      << "the trials saw honest work; caught with: " << r.message;
}

void expect_poison_left_in_timing(const JobResult& r) {
  expect_caught_after_the_trials(r);
  EXPECT_GT(r.errors.non_finite, 0);
}

void expect_stale_answer_in_timing(const JobResult& r) {
  expect_caught_after_the_trials(r);
  EXPECT_EQ(r.errors.non_finite, 0) << "a finite answer, for other numbers";
  EXPECT_GT(r.errors.mismatches, 0);
}

void expect_inputs_guarded_in_timing(const JobResult& r) {
  expect_caught_after_the_trials(r);
  EXPECT_EQ(r.errors.mismatches, 0) << "the inputs are checked before the outputs are compared";
}

// The memo never hits on fresh contents: honest work plus ~3x its time in ballast, slower than the
// reference; a hit would have been timed as one copy kernel, many times faster.
void expect_memo_never_hit(const JobResult& r) {
  expect_clean_pass(r);
  EXPECT_GE(r.rounds, quick_config().stopping.min_rounds);
  EXPECT_LT(r.speedup.speedup, 1.0);
  // Its host reads of x wait on the job stream: the first timed call waits behind the timing gate,
  // its sample is void, and the gate is off for the job's later calls (cuda_device.cpp).
  EXPECT_EQ(r.environment.value("timing_gate", "").rfind("off from a custom call", 0), 0u)
      << r.environment.dump();
}

// Caught once its scan finds the reference's buffer (on the H200 in the timed rounds): the
// reference's buffer was written during the custom's call, and the message says so.
void expect_reference_buffer_guarded(const JobResult& r) {
  EXPECT_NE(r.message.find("reference"), std::string::npos) << r.message;
}

void expect_any_trial(const JobResult& r) { EXPECT_FALSE(r.message.empty()); }

// What it copies is not the answer for these contents (the reference slot is poisoned or holds
// another call's output; the private copy was not found): nearly every element is wrong at trial 0
// (H200: 15,113 of 15,120).
void expect_reference_copy_wrong(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_GT(r.errors.mismatches, element_count(small_output_shape("L1_070")) / 2);
}

// Built on the reference's library work with a sliver of its own: under the issue-12 rule the
// first traced trial already says library_dominated, before its own trick is played (that trick is
// covered by the issue-12 variants and the fake-device tests of executor/executor_timing).
void expect_library_dominated_first(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_FALSE(r.message.empty());
}

void expect_bf16_sized_errors(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(r.errors.non_finite, 0);
  EXPECT_GT(r.errors.mismatches, 0);
  // 8 mantissa bits: errors of a few 1e-3 of outputs of order 1; wrong arithmetic would be O(1).
  EXPECT_GT(r.errors.max_abs_error, 1e-4);
  EXPECT_LT(r.errors.max_abs_error, 0.2);
}

struct BadCase {
  std::string name;  // the variant's file in tests/bad_variants/
  std::string id;
  JobStatus expected;
  void (*expect_details)(const JobResult&);
  // Other verdicts that also catch the trick, where which check fires first is a race.
  std::vector<JobStatus> or_else = {};
};

std::vector<BadCase> bad_cases() {
  return {
      // Session-1 variants built on the reference's cuDNN work: library_dominated comes first now.
      {"writes_its_input", "L2_031", JobStatus::kLibraryDominated, &expect_library_dominated_first},
      {"skips_last_row", "L2_001", JobStatus::kLibraryDominated, &expect_library_dominated_first},
      {"returns_first_output", "L2_021", JobStatus::kLibraryDominated,
       &expect_library_dominated_first},
      {"caches_by_input_pointer", "L1_054", JobStatus::kLibraryDominated,
       &expect_library_dominated_first},
      {"cublas_only", "L1_003", JobStatus::kNoCustomKernel, &expect_library_kernels_only},
      {"side_stream", "L1_075", JobStatus::kForeignStream, &expect_own_kernel_elsewhere},
      {"tf32_conv", "L2_017", JobStatus::kMismatch, &expect_tf32_sized_errors},
      // Once a control; its copy kernel is a sliver beside cuDNN's conv (issue 12, trick 6).
      {"honest_copy", "L1_060", JobStatus::kLibraryDominated, &expect_library_work_right},
      // Issue 12: tricks against the old executor's blind spots, and two honest controls.
      {"memo_by_sampled_values", "L2_093", JobStatus::kOk, &expect_memo_never_hit},
      {"skips_repeated_input", "L2_091", JobStatus::kNonFinite, &expect_poison_left_in_timing},
      // The output is judged as it stood at the call's stop event, and the gate keeps the
      // unjoined work from starting before the judged copy: poison, in the first timed pair,
      // traced or not (H100, session 47). Should the work ever win that race, a traced round
      // names its stream.
      {"private_stream_after_trials",
       "L2_060",
       JobStatus::kNonFinite,
       &expect_caught_after_the_trials,
       {JobStatus::kForeignStream}},
      {"legacy_stream_after_trials",
       "L2_034",
       JobStatus::kNonFinite,
       &expect_caught_after_the_trials,
       {JobStatus::kForeignStream}},
      // A race on the H200: the trace sees the other thread's launch (foreign_stream), or the
      // per-call check runs first and finds the output still poisoned (non_finite), or an earlier
      // call's late work has overwritten the poison with another call's answer (mismatch: 14,331
      // of 14,336 outputs, session 14).
      {"host_thread_launch",
       "L3_013",
       JobStatus::kForeignStream,
       &expect_any_trial,
       {JobStatus::kNonFinite, JobStatus::kMismatch}},
      {"zeroes_inputs_when_timed", "L2_007", JobStatus::kInputMutated,
       &expect_inputs_guarded_in_timing},
      {"clobbers_reference_output", "L1_079", JobStatus::kInputMutated,
       &expect_reference_buffer_guarded},
      {"copies_reference_output", "L1_070", JobStatus::kMismatch, &expect_reference_copy_wrong},
      {"library_with_token_kernel", "L3_031", JobStatus::kLibraryDominated,
       &expect_library_work_right},
      {"bf16_operands", "L1_081", JobStatus::kMismatch, &expect_bf16_sized_errors},
      // Its cached reference instance runs cuDNN on the stream it was created with: caught at the
      // first traced trial, before the stale weights are reused (the fake-device tests cover that).
      {"stale_weights_when_timed", "L3_025", JobStatus::kForeignStream,
       &expect_library_dominated_first},
      {"no_kernel_when_timed", "L1_073", JobStatus::kMismatch, &expect_stale_answer_in_timing},
      // The 2026-12-07 review: the first traced round sees the private stream or the other
      // thread; the untraced rounds before it (the tests below) catch them without the trace.
      {"host_waits_on_private_stream", "L1_019", JobStatus::kForeignStream,
       &expect_caught_after_the_trials},
      {"late_thread_launch",
       "L1_020",
       JobStatus::kForeignStream,
       &expect_caught_after_the_trials,
       {JobStatus::kNonFinite, JobStatus::kMismatch}},
      {"honest_ballast", "L2_010", JobStatus::kOk, &expect_clean_gated_pass},
      {"own_kl_div", "L1_098", JobStatus::kOk, &expect_clean_pass},
  };
}

class BadVariantTest : public testing::TestWithParam<BadCase> {};

TEST_P(BadVariantTest, GetsItsVerdictEveryTime) {
  const BadCase& c = GetParam();
  std::string error;
  const KernelPack* pack = bad_pack(&error);
  ASSERT_NE(pack, nullptr) << error;
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE(c.name + " on " + c.id + ", seed " + std::to_string(seed));
    const JobResult r = run_job(*pack, c.id, seed, quick_config());
    if (std::find(c.or_else.begin(), c.or_else.end(), r.status) != c.or_else.end()) {
      EXPECT_NE(r.status, JobStatus::kOk);
    } else {
      ASSERT_EQ(to_string(r.status), to_string(c.expected)) << r.message;
    }
    c.expect_details(r);
  }
}

INSTANTIATE_TEST_SUITE_P(BadVariantsPack, BadVariantTest, testing::ValuesIn(bad_cases()),
                         [](const testing::TestParamInfo<BadCase>& info) {
                           return info.param.name;
                         });

// Untraced rounds, where the launch trace cannot help (here: no round traced, so the job is
// unverified): the timing gate holds the whole GPU, so the private work of
// host_waits_on_private_stream cannot run while run() waits for it on the host. Its first timed
// call waits out the gate's timeout (a void sample, the gate off from then on), and the ungated
// samples count the wait: the custom, the reference's work plus ~3x its time in ballast, is timed
// slower than the reference. (Against the one-thread gate it was timed at its 1 us ballast.)
TEST(BadVariantsPack, TheGateHoldsTheWholeGpu) {
  std::string error;
  const KernelPack* pack = bad_pack(&error);
  ASSERT_NE(pack, nullptr) << error;
  ExecutorConfig config = quick_config();
  config.no_launch_trace = true;
  const JobResult r = run_job(*pack, "L1_019", kSeeds[0], config);
  ASSERT_EQ(to_string(r.status), to_string(JobStatus::kOk)) << r.message;
  EXPECT_EQ(r.environment.value("timing_gate", "").rfind("off from a custom call", 0), 0u)
      << r.environment.dump();
  EXPECT_LT(r.speedup.speedup, 1.0) << "custom " << r.custom.summary.median << " ms, reference "
                                    << r.reference.summary.median << " ms";
}

// Untraced rounds again: late_thread_launch's thread enqueues the work on the job stream 5 us after
// run() returned, behind the end event. The output is taken for the checks the moment the end
// event passes, on a stream of the device's own: the work is not done by then (non_finite), or is
// still queued once the copy is done (foreign_stream). (When the checks ran on the job stream
// behind it, the late work was complete by the compare and the custom timed at ~0: ok.)
TEST(BadVariantsPack, WorkLaunchedAfterTheCallIsCaughtWithoutTheTrace) {
  std::string error;
  const KernelPack* pack = bad_pack(&error);
  ASSERT_NE(pack, nullptr) << error;
  ExecutorConfig config = quick_config();
  config.no_launch_trace = true;
  for (uint64_t seed : kSeeds) {
    const JobResult r = run_job(*pack, "L1_020", seed, config);
    EXPECT_TRUE(r.status == JobStatus::kNonFinite || r.status == JobStatus::kForeignStream)
        << to_string(r.status) << ": " << r.message;
    EXPECT_NE(r.message.find("timed round"), std::string::npos) << r.message;
  }
}

// The pack holds the custom variants of this folder and no other: the real kernels/*/custom.cu are
// not in it. It is a candidate pack, so it exports no reference (its references are compiled in
// for the bad variants' own use); the reference pack has each problem's reference.
TEST(BadVariantsPack, HoldsOnlyTheBadCustomVariants) {
  std::string error;
  const KernelPack* pack = bad_pack(&error);
  ASSERT_NE(pack, nullptr) << error;
  std::set<std::string> ids;
  for (const BadCase& c : bad_cases()) ids.insert(c.id);
  for (const auto& [id, spec] : catalog().problems) {
    const bool ours = ids.count(id) > 0;
    EXPECT_EQ(pack->table().has_variant(id.c_str(), KB_VARIANT_CUSTOM), ours ? 1 : 0) << id;
    EXPECT_EQ(pack->table().has_variant(id.c_str(), KB_VARIANT_REFERENCE), 0) << id;
    const KernelPack* reference = reference_pack(&error);
    ASSERT_NE(reference, nullptr) << error;
    if (ours) EXPECT_EQ(reference->table().has_variant(id.c_str(), KB_VARIANT_REFERENCE), 1) << id;
  }
}

// The control: each reference of the reference pack, in the custom's place (A/A), passes.
TEST(BadVariantsPack, ReferenceAsCustomIsOk) {
  std::string error;
  const KernelPack* pack = bad_pack(&error);
  ASSERT_NE(pack, nullptr) << error;
  ExecutorConfig config = quick_config();
  config.aa = true;
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.id + " A/A");
    const JobResult r = run_job(*pack, c.id, kSeeds[0], config);
    EXPECT_EQ(to_string(r.status), to_string(JobStatus::kOk)) << r.message;
    EXPECT_EQ(r.errors.mismatches, 0);
  }
}

}  // namespace
}  // namespace kb

#endif  // KB_BAD_PACK_PATH
