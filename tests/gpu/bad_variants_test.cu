// The executor catches each kind of dishonest or broken custom variant with the right verdict,
// every time: every bad variant of the test pack kbpack_bad_variants (tests/bad_variants/) runs as
// a real job (kb::execute_job on the CUDA device, small preset, three run seeds) and must get its
// one expected status, with the error figures that show why. Controls: the pack's honest variant,
// built the same way as the bad ones, gets ok; so does every reference of the pack timed against
// itself (A/A).
//
// Compiled only where the build passes KB_BAD_PACK_PATH (the pack's path) and links kb_executor
// (tests/gpu/CMakeLists.txt); elsewhere this file is empty.
#ifdef KB_BAD_PACK_PATH

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/job_result.h"
#include "common/spec_loader.h"
#include "worker/execution_device.h"
#include "worker/executor.h"
#include "worker/kernel_pack.h"
#include "worker/launch_tracer.h"

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

// Short jobs: a bad variant is caught in the correctness trials, before any timing.
ExecutorConfig quick_config() {
  ExecutorConfig c;
  c.correctness_trials = 3;
  c.warmup_ms = 20;
  c.max_input_sets = 2;
  c.stopping.time_cap_s = 0.5;
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
void expect_input_mutated(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(r.errors.mismatches, 0) << "the inputs are checked before the outputs are compared";
}

void expect_last_rows_unwritten(const JobResult& r) {
  const Shape out = small_output_shape("L2_001");  // (N, C_out, H_out, W_out)
  const int64_t unwritten = out[0] * out[1] * out[3];
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(r.errors.non_finite, unwritten) << "exactly the NaN-poisoned last rows";
  EXPECT_EQ(r.errors.mismatches, unwritten);
  EXPECT_EQ(r.errors.first_mismatch_index, (out[2] - 1) * out[3]);
}

void expect_second_trial_stale(const JobResult& r) {
  EXPECT_EQ(r.correctness_trials, 1) << "the first call is honest and must pass";
  EXPECT_EQ(r.errors.non_finite, 0);
  EXPECT_GT(r.errors.mismatches, 0);
}

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

struct BadCase {
  std::string name;  // the variant's file in tests/bad_variants/
  std::string id;
  JobStatus expected;
  void (*expect_details)(const JobResult&);
};

std::vector<BadCase> bad_cases() {
  return {
      {"writes_its_input", "L2_031", JobStatus::kInputMutated, &expect_input_mutated},
      // NaN where the reference is finite is non_finite, which verdict_of() ranks before mismatch.
      {"skips_last_row", "L2_001", JobStatus::kNonFinite, &expect_last_rows_unwritten},
      {"returns_first_output", "L2_021", JobStatus::kMismatch, &expect_second_trial_stale},
      {"caches_by_input_pointer", "L1_054", JobStatus::kMismatch, &expect_second_trial_stale},
      {"cublas_only", "L1_003", JobStatus::kNoCustomKernel, &expect_library_kernels_only},
      {"side_stream", "L1_075", JobStatus::kForeignStream, &expect_own_kernel_elsewhere},
      {"tf32_conv", "L2_017", JobStatus::kMismatch, &expect_tf32_sized_errors},
      {"honest_copy", "L1_060", JobStatus::kOk, &expect_clean_pass},
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
    ASSERT_EQ(to_string(r.status), to_string(c.expected)) << r.message;
    c.expect_details(r);
  }
}

INSTANTIATE_TEST_SUITE_P(BadVariantsPack, BadVariantTest, testing::ValuesIn(bad_cases()),
                         [](const testing::TestParamInfo<BadCase>& info) {
                           return info.param.name;
                         });

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
