#include "coordinator/db_thread.h"

#include <pqxx/pqxx>

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "coordinator/pg_status.h"
#include "tests/support/assert_ok.h"
#include "tests/unit/coordinator/fake_job_store.h"

namespace kb::coord {
namespace {

DbThreadOptions fast() { return {std::chrono::milliseconds(5), std::chrono::milliseconds(20)}; }

TEST(DbThread, RetriesThroughAnOutageAndKeepsTheOrder) {
  auto owned = std::make_unique<testing::FakeJobStore>();
  testing::FakeJobStore* store = owned.get();
  store->down = true;
  DbThread db(std::move(owned), fast());
  std::vector<int> order;
  std::mutex mutex;
  std::promise<void> done;
  for (int i = 0; i < 3; ++i) {
    db.submit(
        [i](JobStore& s) {
          return s.has_pack("x").is_ok() ? Status::ok() : s.has_pack("x").status();
        },
        [&, i](const Status& status) {
          KB_EXPECT_OK(status);
          std::lock_guard lock(mutex);
          order.push_back(i);
          if (i == 2) done.set_value();
        });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(db.healthy());
  EXPECT_GT(store->reconnects.load(), 1);
  store->down = false;
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(db.healthy());
  EXPECT_TRUE(db.flush(std::chrono::seconds(1)));
}

TEST(DbThread, OtherErrorsAreRetriedThenEndTheOperationAndBatchesAreCounted) {
  DbThread db(std::make_unique<testing::FakeJobStore>(), fast());
  std::promise<Status> failed;
  std::atomic<int> calls{0};
  db.submit([&](JobStore&) { ++calls; return Status::internal("a bug"); },
            [&](const Status& s) { failed.set_value(s); });
  EXPECT_EQ(failed.get_future().get().code(), StatusCode::kInternal);
  EXPECT_EQ(calls.load(), 1 + DbThread::kRetries);
  auto batch = std::make_shared<Batch>();
  batch->run_states.push_back({1, "running"});
  auto outcome = std::make_shared<BatchOutcome>();
  std::promise<Status> applied;
  db.submit_batch(batch, outcome, [&](const Status& s) { applied.set_value(s); });
  KB_EXPECT_OK(applied.get_future().get());
  EXPECT_EQ(db.stats().batches, 1u);
}

// An answer about the request (no such run; a value the database refuses) is final at once: no
// retry, no backoff, the next operation runs.
TEST(DbThread, AnswersAboutTheRequestAreFinalAtOnce) {
  DbThread db(std::make_unique<testing::FakeJobStore>(),
              DbThreadOptions{std::chrono::milliseconds(500), std::chrono::milliseconds(500)});
  for (const Status& answer :
       {Status::not_found("no run 7"), Status::invalid_argument("refused value (22007)")}) {
    std::promise<Status> finished;
    std::atomic<int> calls{0};
    const auto start = std::chrono::steady_clock::now();
    db.submit(
        [&](JobStore&) {
          ++calls;
          return answer;
        },
        [&](const Status& s) { finished.set_value(s); });
    EXPECT_EQ(finished.get_future().get().code(), answer.code());
    EXPECT_EQ(calls.load(), 1);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(400));
  }
}

// A refused value (SQLSTATE class 22 or 23) is the request's fault; an outage class is not.
TEST(PgStatus, RefusedValuesAreInvalidArgumentsAndOutagesIoErrors) {
  auto status_of = [](const char* sqlstate) {
    try {
      throw pqxx::sql_error("boom", "INSERT ...", sqlstate);
    } catch (...) {
      return current_pg_status("store");
    }
  };
  EXPECT_EQ(status_of("22007").code(), StatusCode::kInvalidArgument);  // invalid datetime
  EXPECT_EQ(status_of("22P05").code(), StatusCode::kInvalidArgument);  // NUL in jsonb text
  EXPECT_EQ(status_of("23505").code(), StatusCode::kInvalidArgument);  // unique violation
  EXPECT_EQ(status_of("57014").code(), StatusCode::kIoError);          // statement cancelled
  EXPECT_EQ(status_of("42P01").code(), StatusCode::kInternal);         // undefined table: a bug
}

// A batch with a row the database refuses: the rest is stored, the bad row is stored as a
// runtime_error result saying why, and a row that cannot be stored at all is skipped (logged).
TEST(DbThread, ABatchThatKeepsFailingIsSplitToIsolateTheBadRow) {
  testing::FakeJobStore store;
  for (int64_t id : {1, 2, 3}) store.add_job(id);
  Batch batch;
  for (int64_t id : {1, 2, 999, 3}) {
    ResultRow row;
    row.job_id = id;
    row.result = {{"status", "ok"}, {"poison", id == 2}};
    batch.results.push_back(row);
  }
  batch.run_states.push_back({1, "done"});
  Result<BatchOutcome> r = DbThread::apply_isolating(store, batch);
  KB_ASSERT_OK(r);
  EXPECT_EQ(r->result_inserted, (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(store.stored_status(1), "ok");
  EXPECT_EQ(store.stored_status(2), "runtime_error");
  EXPECT_EQ(store.stored_status(3), "ok");
  EXPECT_EQ(store.result_count(), 3u);
}

TEST(DbThread, StopFinishesWaitingOperationsAsStopped) {
  auto owned = std::make_unique<testing::FakeJobStore>();
  owned->down = true;
  auto db = std::make_unique<DbThread>(std::move(owned), fast());
  std::promise<Status> result;
  db->submit([](JobStore& s) { return s.has_pack("x").status(); },
             [&](const Status& s) { result.set_value(s); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  db.reset();
  EXPECT_EQ(result.get_future().get().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kb::coord
