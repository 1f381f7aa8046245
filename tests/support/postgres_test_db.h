// A fresh PostgreSQL database per test, for tests of the store and of anything that writes to it.
//
// KB_TEST_PG_URL names an admin URL (a role that may CREATE DATABASE), e.g. the one
// tools/pg-local.sh prints; tools/test.sh starts a throwaway cluster and sets it when PostgreSQL
// is installed. TestDatabase creates kbtest_<pid>_<counter>_<random> on that server and drops it
// (WITH (FORCE): leftover connections do not keep it alive) when destroyed. Without
// KB_TEST_PG_URL, KB_REQUIRE_TEST_DB skips the test with a message that says how to enable it.
//
//   TEST(Store, Something) {
//     KB_REQUIRE_TEST_DB(db);                  // skips, or fails when the server is unusable
//     KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
//     ...
//   }
//
// Thread safety: one TestDatabase per test; the helpers are thread-compatible.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"
#include "tests/support/assert_ok.h"

namespace kb::testing {

class TestDatabase {
 public:
  // Creates the database when KB_TEST_PG_URL is set; check available() and status().
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  bool available() const { return !admin_url_.empty(); }  // KB_TEST_PG_URL was set
  const Status& status() const { return status_; }        // of the CREATE DATABASE
  const std::string& name() const { return name_; }
  const std::string& url() const { return url_; }  // the new database's URL
  const std::string& admin_url() const { return admin_url_; }

 private:
  std::string admin_url_, name_, url_;
  Status status_;
};

// `url` with its database name replaced by `dbname` (URI or key=value form).
std::string url_with_database(const std::string& url, const std::string& dbname);

// Applies the repository's migrations (schemas/) to the database at `url`.
Status apply_migrations(const std::string& url);

}  // namespace kb::testing

// Declares `var`, a TestDatabase; skips the test without KB_TEST_PG_URL, fails it when the
// database cannot be created.
#define KB_REQUIRE_TEST_DB(var)                                                            \
  ::kb::testing::TestDatabase var;                                                         \
  if (!var.available()) {                                                                  \
    GTEST_SKIP() << "needs PostgreSQL: set KB_TEST_PG_URL to an admin URL (tools/test.sh " \
                    "starts a throwaway cluster when PostgreSQL is installed)";            \
  }                                                                                        \
  KB_ASSERT_OK(var.status())
