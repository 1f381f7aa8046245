// The executor tests' fixture: L1_003 (bmm) at the small preset on the fake device
// (fake_execution_device.h), warm-up three calls long.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "common/spec_loader.h"
#include "executor/executor.h"
#include "tests/unit/executor/fake_execution_device.h"

namespace kb {

inline std::shared_ptr<const ProblemSpec> bmm_spec() {
  static const Result<ProblemCatalog> kCatalog = load_problem_catalog(default_problems_dir());
  if (!kCatalog.is_ok()) return nullptr;
  auto it = kCatalog.value().problems.find("L1_003");
  return it == kCatalog.value().problems.end() ? nullptr : it->second;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_ = bmm_spec();
    ASSERT_NE(spec_, nullptr) << "L1_003 is missing from " << default_problems_dir();
    std::ifstream in(spec_->file);
    std::stringstream text;
    text << in.rdbuf();
    request_.spec = spec_;
    request_.spec_yaml = text.str();
    request_.preset = "small";
    request_.seed = 1234;
    request_.timing_secret = 5678;  // the timed inputs and traced rounds, fixed for the tests
    request_.config.warmup_ms = 0;  // the fake's calls take no time; three calls warm it up
    // Every round traced, so that each check's round is known; the tests of --trace-fraction
    // (the default, 0.25) set it themselves.
    request_.config.trace_fraction = 1;
  }

  JobResult run() { return execute_job(device_, request_); }
  void set_custom(fake::Implementation impl) {
    device_.variants[KB_VARIANT_CUSTOM].run = std::move(impl);
  }

  // Elements of L1_003 small: batch 3 x M 17 x N 19.
  static constexpr int64_t kOutputs = 3 * 17 * 19;
  // Custom calls before the timed ones: 5 correctness trials, 3 warm-up calls. Timed round r
  // makes custom calls kFirstTimedCall + 2r (pair A B) and + 2r + 1 (pair B A).
  static constexpr int kFirstTimedCall = 5 + 3;

  std::shared_ptr<const ProblemSpec> spec_;
  JobRequest request_;
  fake::Device device_;
};

}  // namespace kb
