// FleetFixture: the gtest fixture of the tests that run a FleetStack (tests/integration/): a fresh
// database, a work directory (a TempDir) and the stack in it. The stack stops before its database
// is dropped; when the test failed, every log's tail is printed and the work directory is kept.
//
//   TEST_F(FleetTest, Something) {   // class FleetTest : public kb::testing::FleetFixture {...}
//     KB_START_FLEET(stack);         // skips without KB_TEST_PG_URL; the coordinator is serving
//     stack.add_worker("sim-0", {"--device", "sim"});
//
// KB_OPEN_FLEET(stack) is the same without starting the coordinator, for a test that prepares
// something (a full disk, an environment) first.
//
// Thread safety: one per test.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "tests/support/assert_ok.h"
#include "tests/support/fleet_stack.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/temp_dir.h"

namespace kb::testing {

inline constexpr const char* kNeedsPostgres =
    "needs PostgreSQL: set KB_TEST_PG_URL (tools/test.sh starts a throwaway cluster)";

class FleetFixture : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && stack_) std::cerr << stack_->logs_tail() << "\n";
    stack_.reset();
    db_.reset();
    if (HasFailure() && work_dir_) {
      std::cerr << "the work directory is kept: " << work_dir_->string() << "\n";
      work_dir_->keep();
    }
  }
  // A fresh database in KB_TEST_PG_URL's cluster; false without KB_TEST_PG_URL.
  bool open_database() {
    db_ = std::make_unique<TestDatabase>();
    return db_->available();
  }
  // A stack over `db_url` in a fresh work directory; its coordinator is not started.
  FleetStack& make_stack(const std::string& db_url) {
    work_dir_.emplace("kb-fleet");
    stack_ = std::make_unique<FleetStack>(FleetOptions{db_url}, work_dir_->string());
    return *stack_;
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<FleetStack> stack_;
  std::optional<::kb::test::TempDir> work_dir_;
};

}  // namespace kb::testing

// Inside a FleetFixture test: skips without KB_TEST_PG_URL, fails when the database cannot be
// made, and declares `stack`, a FleetStack on it (coordinator not started).
#define KB_OPEN_FLEET(stack)                                           \
  if (!open_database()) GTEST_SKIP() << ::kb::testing::kNeedsPostgres; \
  KB_ASSERT_OK(db_->status());                                         \
  ::kb::testing::FleetStack& stack = make_stack(db_->url())

// KB_OPEN_FLEET, then the coordinator started (a failure fails the test).
#define KB_START_FLEET(stack) \
  KB_OPEN_FLEET(stack);       \
  KB_ASSERT_OK(stack.start_coordinator())
