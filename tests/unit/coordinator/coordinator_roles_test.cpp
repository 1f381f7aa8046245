// Roles from CURVE keys (coordinator/access_control.h, docs/security.md), on the real coordinator
// over real ZeroMQ CURVE sockets with per-role allow-lists: a worker key cannot submit, a client
// key cannot register, a worker key is bound to its name, a submitter cannot cancel another's run
// or set unsafe options, submitted_by is the key's name, SIGHUP's reload admits a new key, and
// READY's versions are checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "common/curve_keys.h"
#include "common/sha256.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/coordinator/coordinator_fixture.h"

namespace kb::coord {
namespace {

using testing::CoordinatorTest;
using testing::metric;
using wire::Message;
using wire::MessageType;
using Json = nlohmann::json;

class CoordinatorRolesTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    for (auto* k : {&server_, &worker_key_, &alice_, &bob_, &admin_, &late_}) {
      *k = curve::generate_key_pair().value();
    }
    KB_ASSERT_OK(curve::write_key_file(file("server.key"), server_, /*replace=*/true));
    std::ofstream(file("workers.txt")) << worker_key_.public_key << " gpu-1\n";
    std::ofstream(file("submitters.txt")) << "# people\n" << alice_.public_key << " alice\n"
                                          << bob_.public_key << " bob\n";
    std::ofstream(file("admins.txt")) << admin_.public_key << " root\n";
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  void start_with_keys(PackQuota quota = {}) {
    CoordinatorConfig config;
    config.pack_quota = quota;
    config.curve_secret_key_file = file("server.key");
    config.allow_lists = allow_list_files_in(dir_.string());
    start(config);
  }
  zmq::socket_t as(const curve::KeyPair& keys, const std::string& endpoint) {
    zmq::socket_t s(context_, zmq::socket_type::dealer);
    wire::configure_socket(s);
    curve::configure_client(s, keys, server_.public_key);
    s.connect(endpoint);
    return s;
  }
  zmq::socket_t client_as(const curve::KeyPair& k) { return as(k, coordinator_->endpoints().clients); }
  zmq::socket_t worker_as(const curve::KeyPair& k) { return as(k, coordinator_->endpoints().workers); }
  static Json ready(const std::string& name, Json protocol = 1, std::string version = coordinator_version()) {
    return {{"worker", name}, {"device", {{"kind", "sim"}, {"model", "sim"}}},
            {"software", {{"kbfleet", version}}}, {"protocol", protocol}};
  }
  int64_t submit_sim(zmq::socket_t& c, Json extra = Json::object()) {
    Json body = {{"problems", "sim"}, {"sim_jobs", {1, 2}}};
    body.update(extra);
    send(c, MessageType::kSubmit, body);
    return expect_reply<wire::SubmitReply>(c).run_id;
  }

  ::kb::test::TempDir dir_{"kb-roles-test"};
  curve::KeyPair server_, worker_key_, alice_, bob_, admin_, late_;
};

TEST_F(CoordinatorRolesTest, AWorkerKeyCannotSubmitOrEvenConnectAsAClient) {
  start_with_keys();
  zmq::socket_t intruder = client_as(worker_key_);
  send(intruder, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {1}}});
  EXPECT_TRUE(nothing_but_heartbeats(intruder, 500));
  EXPECT_EQ(store_->run_count(), 0u);  // nothing was submitted
  EXPECT_GE(metric(metrics(), "kb_auth_rejected_total"), 1);
}

TEST_F(CoordinatorRolesTest, AClientKeyCannotRegisterAsAWorker) {
  start_with_keys();
  for (const curve::KeyPair* key : {&alice_, &admin_}) {
    zmq::socket_t w = worker_as(*key);
    send(w, MessageType::kReady, ready("gpu-1"));
    EXPECT_TRUE(nothing_but_heartbeats(w, 400));
  }
  EXPECT_EQ(store_->worker_count(), 0u);
  EXPECT_GE(metric(metrics(), "kb_auth_rejected_total"), 2);
}

TEST_F(CoordinatorRolesTest, AWorkerKeyIsBoundToItsNameAndALiveNameCannotBeTakenOver) {
  start_with_keys();
  zmq::socket_t imposter = worker_as(worker_key_);
  send(imposter, MessageType::kReady, ready("gpu-2"));
  EXPECT_NE(expect(imposter, MessageType::kDisconnect).body["reason"].get<std::string>().find(
                "belongs to worker 'gpu-1'"), std::string::npos);
  zmq::socket_t first = worker_as(worker_key_);
  send(first, MessageType::kReady, ready("gpu-1"));
  expect(first, MessageType::kWelcome);
  zmq::socket_t second = worker_as(worker_key_);  // the same key, a second process
  send(second, MessageType::kReady, ready("gpu-1"));
  EXPECT_NE(expect(second, MessageType::kDisconnect).body["reason"].get<std::string>().find(
                "in use by a live session"), std::string::npos);
  EXPECT_EQ(store_->worker_count(), 1u);
  EXPECT_EQ(metric(metrics(), "kb_dropped_messages_total{reason=\"forbidden\"}"), 2);
}

TEST_F(CoordinatorRolesTest, SubmittedByIsTheKeysNameAndOnlyAdminsSetUnsafeOptions) {
  start_with_keys();
  zmq::socket_t alice = client_as(alice_);
  const int64_t run = submit_sim(alice, {{"submitted_by", "root"}});
  ASSERT_GT(run, 0);
  EXPECT_EQ(store_->submitted_by(run), "alice");
  for (const Json& unsafe : {Json{{"max_attempts", 10}}, Json{{"job_timeout_s", 86400}}}) {
    Json body = {{"problems", "sim"}, {"sim_jobs", {1}}};
    body.update(unsafe);
    send(alice, MessageType::kSubmit, body);
    EXPECT_EQ(expect(alice, MessageType::kError).body["code"], "forbidden") << unsafe.dump();
  }
  zmq::socket_t root = client_as(admin_);
  // Fewer trials than the fleet's floor: no key's privilege, the same answer for both.
  for (zmq::socket_t* who : {&alice, &root}) {
    send(*who, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {1}}, {"trials", 0}});
    EXPECT_EQ(expect(*who, MessageType::kError).body["code"], "bad_request");
  }
  const int64_t admin_run = submit_sim(root, {{"max_attempts", 10}});
  EXPECT_EQ(store_->submitted_by(admin_run), "root");
  EXPECT_EQ(store_->run_count(), 2u);
}

TEST_F(CoordinatorRolesTest, ASubmitterCancelsOnlyItsOwnRunsAndAnAdminAny) {
  start_with_keys();
  zmq::socket_t alice = client_as(alice_), bob = client_as(bob_), root = client_as(admin_);
  const int64_t alices = submit_sim(alice), bobs = submit_sim(bob);
  send(bob, MessageType::kCancel, {{"run_id", alices}});
  Message refused = expect(bob, MessageType::kError);
  EXPECT_EQ(refused.body["code"], "forbidden");
  EXPECT_NE(refused.body["message"].get<std::string>().find("submitted by 'alice'"), std::string::npos);
  EXPECT_FALSE(store_->is_cancelled(alices));
  send(alice, MessageType::kCancel, {{"run_id", alices}});
  expect(alice, MessageType::kReply);
  send(root, MessageType::kCancel, {{"run_id", bobs}});
  expect(root, MessageType::kReply);
  EXPECT_TRUE(store_->is_cancelled(alices));
  EXPECT_TRUE(store_->is_cancelled(bobs));
}

TEST_F(CoordinatorRolesTest, ReloadAdmitsAKeyAddedToTheListsWithoutARestart) {
  start_with_keys();
  zmq::socket_t before = client_as(late_);
  send(before, MessageType::kQuery, {{"what", "health"}});
  EXPECT_TRUE(nothing_but_heartbeats(before, 400));
  std::ofstream(file("submitters.txt"), std::ios::app) << late_.public_key << " carol\n";
  coordinator_->request_reload();  // what SIGHUP does
  zmq::socket_t after = client_as(late_);
  EXPECT_GT(submit_sim(after), 0);
  // A broken list is not loaded: the old lists stay in force.
  std::ofstream(file("admins.txt"), std::ios::app) << "not-a-key root2\n";
  coordinator_->request_reload();
  zmq::socket_t still = client_as(late_);
  EXPECT_GT(submit_sim(still), 0);
}

TEST_F(CoordinatorRolesTest, SubmitChecksTheCommitShaAndThePackQuota) {
  PackQuota quota;
  quota.max_pack_bytes = 1000;
  start_with_keys(quota);
  zmq::socket_t alice = client_as(alice_);
  const std::vector<std::string> bad_shas = {"abc1' OR ''='", "ABCDEF1", "abc12", std::string(65, 'a')};
  for (const std::string& bad : bad_shas) {
    send(alice, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {1}}, {"commit_sha", bad}});
    EXPECT_EQ(expect(alice, MessageType::kError).body["code"], "bad_request") << bad;
  }
  EXPECT_GT(submit_sim(alice, {{"commit_sha", "0123456789abcdef"}}), 0);
  const std::string huge(1001, 'x');
  send(alice, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {1}}, {"pack", sha256_hex(huge)}}, huge);
  EXPECT_EQ(expect(alice, MessageType::kError).body["code"], "forbidden");
  EXPECT_FALSE(store_->has_pack_bytes(sha256_hex(huge)));
  EXPECT_EQ(store_->run_count(), 1u);
}

TEST_F(CoordinatorTest, AWorkerOfAnotherProtocolOrVersionIsRefusedNamingBoth) {
  start();
  zmq::socket_t w = worker();
  send(w, MessageType::kReady, {{"worker", "old"}, {"device", {{"kind", "sim"}}}, {"software", Json::object()},
                                {"protocol", 0}});
  const std::string protocol = expect(w, MessageType::kDisconnect).body["reason"];
  EXPECT_NE(protocol.find("protocol version 0 is not this coordinator's 1"), std::string::npos) << protocol;
  zmq::socket_t v = worker();
  send(v, MessageType::kReady, {{"worker", "new"}, {"device", {{"kind", "sim"}}},
                                {"software", {{"kbfleet", "7.0.0"}}}, {"protocol", 1}});
  const std::string version = expect(v, MessageType::kDisconnect).body["reason"];
  EXPECT_NE(version.find("worker kbfleet 7.0.0 is incompatible with coordinator kbfleet " +
                         std::string(coordinator_version())), std::string::npos) << version;
}

}  // namespace
}  // namespace kb::coord
