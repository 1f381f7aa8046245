// The result spool: results survive as whole files until ACK, come back in order, and a corrupt
// file is set aside rather than stopping the worker.
#include "worker/result_spool.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kb {
namespace {

namespace fs = std::filesystem;

class ResultSpoolTest : public ::testing::Test {
 protected:
  static wire::ResultMessage result(int64_t job_id, int attempt = 1) {
    wire::ResultMessage r;
    r.token = {job_id, attempt, 77};
    r.result = {{"status", "ok"}};
    return r;
  }
  ::kb::test::TempDir root_{"kb-spool-test"};
  const fs::path dir_ = root_ / "results";  // made by ResultSpool::open
};

TEST_F(ResultSpoolTest, PutListAndRemove) {
  auto spool = ResultSpool::open(dir_);
  KB_ASSERT_OK(spool);
  KB_ASSERT_OK(spool->put(result(12)));
  KB_ASSERT_OK(spool->put(result(3, 2)));
  EXPECT_TRUE(fs::exists(dir_ / "12-1.json"));
  EXPECT_FALSE(fs::exists(dir_ / "12-1.json.tmp"));

  std::vector<ResultSpool::Entry> entries = spool->list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].job_id, 3);  // oldest job first
  EXPECT_EQ(entries[0].attempt, 2);
  EXPECT_EQ(entries[1].result.to_body(), result(12).to_body());

  KB_ASSERT_OK(spool->remove(12, 1));
  KB_ASSERT_OK(spool->remove(12, 1));  // a duplicate ACK is fine
  ASSERT_EQ(spool->list().size(), 1u);
}

TEST_F(ResultSpoolTest, SurvivesReopening) {
  {
    auto spool = ResultSpool::open(dir_);
    KB_ASSERT_OK(spool->put(result(7)));
  }
  auto again = ResultSpool::open(dir_);
  ASSERT_EQ(again->list().size(), 1u);
}

TEST_F(ResultSpoolTest, CorruptFileIsSetAsideNotFatal) {
  auto spool = ResultSpool::open(dir_);
  KB_ASSERT_OK(spool->put(result(1)));
  std::ofstream(dir_ / "2-1.json") << "{\"job_id\": 2, \"resu";  // torn by hand
  std::ofstream(dir_ / "3-1.json") << "[1, 2]";                  // JSON, not a RESULT body
  std::ofstream(dir_ / "4-1.json") << R"({"job_id": 4, "attempt": "1", "result": {}})";
  std::ofstream(dir_ / "notes.txt") << "not ours";               // ignored

  std::vector<ResultSpool::Entry> entries = spool->list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].job_id, 1);
  EXPECT_EQ(spool->bad_files(), 3);
  EXPECT_TRUE(fs::exists(dir_ / "2-1.json.bad"));
  EXPECT_TRUE(fs::exists(dir_ / "3-1.json.bad"));
  EXPECT_TRUE(fs::exists(dir_ / "4-1.json.bad"));  // a RESULT of the wrong shape
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_EQ(spool->list().size(), 1u);  // set aside once, then out of the way
  EXPECT_EQ(spool->bad_files(), 3);
}

TEST_F(ResultSpoolTest, UnwritableDirectoryIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  auto spool = ResultSpool::open(dir_);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_FALSE(spool->put(result(1)).is_ok());
  fs::permissions(dir_, fs::perms::owner_all);
}

}  // namespace
}  // namespace kb
