// Roles and names from the allow-lists (coordinator/access_control.h): one key, one role; the ZAP
// User-Id round trip; who may cancel; which options need an admin; what a commit SHA is.
#include "coordinator/access_control.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "common/curve_keys.h"
#include "common/job_result.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb::coord {
namespace {

class AllowListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    a_ = curve::generate_key_pair().value().public_key;
    b_ = curve::generate_key_pair().value().public_key;
  }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string()) << text;
    return (dir_ / name).string();
  }
  ::kb::test::TempDir dir_{"kb-allow-test"};
  std::string a_, b_;
};

TEST_F(AllowListTest, EachKeyGetsTheRoleOfItsFileAndItsName) {
  write("workers.txt", "# nodes\n" + a_ + " gpu-node-1\n\n");
  write("admins.txt", b_ + "  ops \n");
  auto lists = load_allow_lists(allow_list_files_in(dir_.string()));
  KB_ASSERT_OK(lists);
  ASSERT_EQ(lists->size(), 2u);
  EXPECT_EQ(lists->at(a_).role, Role::kWorker);
  EXPECT_EQ(lists->at(a_).name, "gpu-node-1");
  EXPECT_EQ(lists->at(b_).role, Role::kAdmin);
  EXPECT_EQ(lists->at(b_).name, "ops");
  EXPECT_TRUE(allow_list_files_in(dir_.string()).submitters.empty());  // absent: none
}

TEST_F(AllowListTest, AKeyInTwoRolesANamelessKeyOrABadKeyIsRefusedWithItsLine) {
  AllowListFiles files{write("w.txt", a_ + " w1\n"), write("s.txt", "# x\n" + a_ + " alice\n"), ""};
  auto twice = load_allow_lists(files);
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.status().message().find("s.txt:2: key already listed as worker 'w1'"), std::string::npos)
      << twice.status().message();
  EXPECT_FALSE(load_allow_lists({write("n.txt", a_ + "\n"), "", ""}).is_ok());
  EXPECT_FALSE(load_allow_lists({write("c.txt", a_ + " a:b\n"), "", ""}).is_ok());
  auto bad = load_allow_lists({"", write("bad.txt", "not-a-key x\n"), ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find(":1: expected a 40-character Z85 public key"), std::string::npos);
}

TEST(AccessControl, UserIdsRoundTripAndNoUserIdIsTheLocalAdmin) {
  const auto peer = peer_from_user_id(user_id_of({Role::kSubmitter, "alice"}));
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->role, Role::kSubmitter);
  EXPECT_EQ(peer->name, "alice");
  EXPECT_TRUE(peer->authenticated);
  const auto local = peer_from_user_id("");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->role, Role::kAdmin);
  EXPECT_FALSE(local->authenticated);
  EXPECT_FALSE(peer_from_user_id("root:x"));
  EXPECT_FALSE(peer_from_user_id("admin"));
  EXPECT_FALSE(peer_from_user_id("admin:"));
}

TEST(AccessControl, SubmittersCancelTheirOwnRunsAdminsAnyWorkersNone) {
  EXPECT_TRUE(may_cancel({Role::kSubmitter, "alice", true}, "alice"));
  EXPECT_FALSE(may_cancel({Role::kSubmitter, "bob", true}, "alice"));
  EXPECT_TRUE(may_cancel({Role::kAdmin, "ops", true}, "alice"));
  EXPECT_FALSE(may_cancel({Role::kWorker, "alice", true}, "alice"));
}

TEST(AccessControl, UnsafeJobOptionsNeedAnAdmin) {
  const Peer alice{Role::kSubmitter, "alice", true}, ops{Role::kAdmin, "ops", true};
  wire::SubmitMessage safe;
  safe.max_attempts = 3;
  safe.job_timeout_s = 600;
  safe.trials = kMinVerifiedTrials;
  safe.time_cap_s = 120;
  EXPECT_EQ(refused_job_option(alice, safe), "");
  wire::SubmitMessage attempts, timeout, time_cap;
  attempts.max_attempts = 4;
  timeout.job_timeout_s = 601;
  time_cap.time_cap_s = 86400;  // a lease budget of two days
  for (const wire::SubmitMessage& unsafe : {attempts, timeout, time_cap}) {
    EXPECT_NE(refused_job_option(alice, unsafe), "") << unsafe.to_body().dump();
    EXPECT_EQ(refused_job_option(ops, unsafe), "") << unsafe.to_body().dump();
  }
}

// Fewer correctness trials than the fleet's floor is no admin's privilege either: the SUBMIT is
// invalid for every key (wire::submit_rules), not "forbidden" with a promise an admin key cannot
// keep.
TEST(AccessControl, TrialsBelowTheFleetsFloorAreInvalidForEveryKey) {
  const Peer alice{Role::kSubmitter, "alice", true};
  wire::SubmitMessage submit;
  submit.pack = std::string(64, 'a');  // a real run's pack
  submit.trials = kMinVerifiedTrials;
  KB_EXPECT_OK(wire::submit_rules(submit));
  for (const int64_t trials : {int64_t{0}, int64_t{kMinVerifiedTrials - 1}}) {
    submit.trials = trials;
    EXPECT_EQ(refused_job_option(alice, submit), "") << trials;
    const Status s = wire::submit_rules(submit);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << trials;
    EXPECT_NE(s.message().find("trials"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace kb::coord
