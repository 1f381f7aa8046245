// Regression detection in a real PostgreSQL (skips without KB_TEST_PG_URL): synthetic series with
// raw samples at 1% noise, an injected 3% slowdown flagged and A/A series left alone; later points
// confirming and clearing flags; idempotence; the /metrics count.
#include "coordinator/regression_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/support/assert_ok.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/synthetic_results.h"

namespace kb::coord {
namespace {

using kb::testing::SyntheticPoint;

constexpr int kHistory = 30;
constexpr int64_t kT0 = 1700000000;

class Noise {
 public:
  explicit Noise(uint64_t seed) : rng_(seed), n_(0, 0.01) {}
  std::vector<double> samples(double ms, int count = 20) {
    std::vector<double> v(count);
    for (double& x : v) x = ms * std::exp(n_(rng_));
    return v;
  }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> n_;
};

SyntheticPoint point(Noise& noise, const std::string& problem, int index, double custom_ms) {
  SyntheticPoint p;
  p.problem = problem;
  p.commit_sha = "c" + std::to_string(index);
  p.commit_time_s = kT0 + index * 60;
  p.custom_samples_ms = noise.samples(custom_ms);
  p.reference_samples_ms = noise.samples(2.0);
  return p;
}

std::vector<SyntheticPoint> histories(Noise& noise, const std::vector<std::string>& problems) {
  std::vector<SyntheticPoint> points;
  for (const std::string& problem : problems) {
    for (int i = 0; i < kHistory; ++i) points.push_back(point(noise, problem, i, 1.0));
  }
  return points;
}

int64_t count(pqxx::connection& conn, const std::string& sql) {
  pqxx::nontransaction txn(conn);
  return txn.exec(sql)[0][0].as<int64_t>();
}

class RegressionStoreTest : public ::testing::Test {
 protected:
  void connect(const kb::testing::TestDatabase& db) {
    KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
    conn_ = std::make_unique<pqxx::connection>(db.url());
  }
  std::unique_ptr<pqxx::connection> conn_;
};

// The "Show" item in the database: 200 series slowed by 3%, 200 A/A series, one batch.
TEST_F(RegressionStoreTest, FlagsInjectedSlowdownsAndNotSameCommitSeries) {
  KB_REQUIRE_TEST_DB(db);
  connect(db);
  Noise noise(424242);
  std::vector<std::string> slowed, same;
  for (int s = 0; s < 200; ++s) {
    slowed.push_back("S_" + std::to_string(s));
    same.push_back("A_" + std::to_string(s));
  }
  std::vector<std::string> all = slowed;
  all.insert(all.end(), same.begin(), same.end());
  kb::testing::insert_synthetic_results(*conn_, histories(noise, all));
  std::vector<SyntheticPoint> fresh;
  for (const std::string& p : slowed) fresh.push_back(point(noise, p, kHistory, 1.03));
  for (const std::string& p : same) fresh.push_back(point(noise, p, kHistory, 1.0));
  const std::vector<int64_t> ids = kb::testing::insert_synthetic_results(*conn_, fresh);

  int flagged = -1;
  KB_ASSERT_OK(detect_regressions(*conn_, ids, RegressionConfig{}, &flagged));
  const int64_t true_flags = count(*conn_,
      "SELECT count(*) FROM regressions WHERE variant = 'custom' AND problem_id LIKE 'S\\_%'");
  const int64_t false_flags = count(*conn_,
      "SELECT count(*) FROM regressions WHERE variant = 'reference' OR problem_id LIKE 'A\\_%'");
  std::printf("in PostgreSQL: %lld / 200 slowed series flagged, %lld false flags of 600 checks\n",
              static_cast<long long>(true_flags), static_cast<long long>(false_flags));
  EXPECT_GE(true_flags, 190);       // >= 95%
  EXPECT_LE(false_flags, 30);       // <= 5% of the 600 unchanged (series, variant) points
  EXPECT_EQ(flagged, true_flags + false_flags);
  EXPECT_EQ(count_open_regressions(*conn_).value(), flagged);

  // Idempotent: a second call (the DB thread retried) adds nothing.
  int again = -1;
  KB_ASSERT_OK(detect_regressions(*conn_, ids, RegressionConfig{}, &again));
  EXPECT_EQ(again, 0);
  EXPECT_EQ(count(*conn_, "SELECT count(*) FROM regressions"), flagged);
}

TEST_F(RegressionStoreTest, LaterPointsConfirmOrClearAFlag) {
  KB_REQUIRE_TEST_DB(db);
  connect(db);
  Noise noise(7);
  kb::testing::insert_synthetic_results(*conn_, histories(noise, {"STAYS", "FIXED"}));
  RegressionConfig config;  // confirm_points = 3
  auto add = [&](int index, double stays_ms, double fixed_ms) {
    std::vector<int64_t> ids = kb::testing::insert_synthetic_results(
        *conn_, {point(noise, "STAYS", index, stays_ms), point(noise, "FIXED", index, fixed_ms)});
    int flagged = -1;
    KB_EXPECT_OK(detect_regressions(*conn_, ids, config, &flagged));
    return flagged;
  };
  auto state = [&](const std::string& problem) {
    pqxx::nontransaction txn(*conn_);
    return txn.exec("SELECT state || ':' || slow_points FROM regressions WHERE variant = 'custom'"
                    " AND problem_id = " + txn.quote(problem))[0][0].as<std::string>();
  };
  EXPECT_EQ(add(kHistory, 1.05, 1.05), 2);
  EXPECT_EQ(state("STAYS"), "flagged:1");
  EXPECT_EQ(add(kHistory + 1, 1.05, 1.0), 0);  // FIXED comes back: cleared, not a new flag
  EXPECT_EQ(state("STAYS"), "flagged:2");
  EXPECT_EQ(state("FIXED"), "cleared:0");
  EXPECT_EQ(add(kHistory + 2, 1.05, 1.0), 0);
  EXPECT_EQ(state("STAYS"), "confirmed:3");
  EXPECT_EQ(count_open_regressions(*conn_).value(), 1);
  EXPECT_EQ(add(kHistory + 3, 1.0, 1.0), 0);  // the fix lands
  EXPECT_EQ(state("STAYS"), "cleared:0");
  EXPECT_EQ(count_open_regressions(*conn_).value(), 0);
}

TEST_F(RegressionStoreTest, IgnoresFailedSimulatedAndShortSeries) {
  KB_REQUIRE_TEST_DB(db);
  connect(db);
  Noise noise(9);
  kb::testing::insert_synthetic_results(*conn_, histories(noise, {"P"}));
  SyntheticPoint sim = point(noise, "P", kHistory, 2.0), bad = point(noise, "P", kHistory, 2.0),
                 short_series = point(noise, "NEW", kHistory, 2.0);
  sim.device_kind = "sim";
  bad.status = "mismatch";
  const std::vector<int64_t> ids =
      kb::testing::insert_synthetic_results(*conn_, {sim, bad, short_series});
  int flagged = -1;
  KB_ASSERT_OK(detect_regressions(*conn_, ids, RegressionConfig{}, &flagged));
  EXPECT_EQ(flagged, 0);
  KB_EXPECT_OK(detect_regressions(*conn_, {}, RegressionConfig{}, &flagged));
}

TEST(RegressionStore, ConnectionErrorsBecomeStatus) {
  KB_REQUIRE_TEST_DB(db);
  pqxx::connection conn(db.url());  // not migrated: no regressions table
  Result<int64_t> n = count_open_regressions(conn);
  ASSERT_FALSE(n.is_ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace kb::coord
