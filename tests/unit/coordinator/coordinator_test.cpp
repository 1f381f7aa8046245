// The coordinator over real ZeroMQ sockets on tcp://127.0.0.1:* in this process, with a fake
// JobStore: the protocol's happy path, bad input, a database outage, SUBMIT's checks, drain, and
// the CURVE allow-list (roles: coordinator_roles_test.cpp; binds: bind_policy_test.cpp).
#include "coordinator/coordinator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "common/curve_keys.h"
#include "common/sha256.h"
#include "tests/support/assert_ok.h"
#include "tests/unit/coordinator/coordinator_fixture.h"

namespace kb::coord {
namespace {

using testing::CoordinatorTest;
using testing::http_get;
using testing::metric;
using wire::Message;
using wire::MessageType;
using Json = nlohmann::json;

TEST_F(CoordinatorTest, RunsSimJobsEndToEndAndAcksOnlyCommittedResults) {
  start();
  zmq::socket_t c = client();
  send(c, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {5, 15, 10}}, {"request_id", "r1"}});
  Message reply = expect(c, MessageType::kReply);
  EXPECT_EQ(reply.body["request_id"], "r1");
  EXPECT_EQ(reply.body["jobs"], 3);
  zmq::socket_t w = worker();
  EXPECT_EQ(register_worker(w, "sim-0"), 1);
  send(w, MessageType::kRequest, {{"credits", 2}});
  Message first = expect(w, MessageType::kJob);
  Message second = expect(w, MessageType::kJob);
  EXPECT_EQ(first.body["params"]["sleep_ms"], 15);  // longest first
  EXPECT_EQ(second.body["params"]["sleep_ms"], 10);
  for (const Message& job : {first, second}) {
    send(w, MessageType::kResult, result_for(job));
    Message ack = expect(w, MessageType::kAck);
    EXPECT_EQ(ack.body["job_id"], job.body["job_id"]);
    EXPECT_FALSE(ack.body.contains("rejected"));
  }
  send(w, MessageType::kRequest, {{"credits", 1}});
  Message third = expect(w, MessageType::kJob);
  send(w, MessageType::kResult, result_for(third));
  expect(w, MessageType::kAck);
  EXPECT_EQ(store_->result_count(), 3u);
  // A resent result of a committed job (its ACK was lost) is forgotten here: the worker is told
  // to drop it; it is not stored again.
  send(w, MessageType::kResult, result_for(first));
  EXPECT_EQ(expect(w, MessageType::kAck).body["rejected"], "unknown_job");
  EXPECT_EQ(store_->result_count(), 3u);
  EXPECT_EQ(metric(metrics(), "kb_results_stored_total"), 3);
  EXPECT_EQ(metric(metrics(), "kb_jobs_completed_total"), 3);
}

TEST_F(CoordinatorTest, BadInputIsDroppedAndCountedAndTheCoordinatorStillAnswers) {
  start();
  zmq::socket_t w = worker();
  send_frames(w, {"KBF1", "READY"});                          // bad_frame_count
  send_frames(w, {"KBF2", "READY", "{}"});                    // bad_tag
  send_frames(w, {"KBF1", "NOPE", "{}"});                     // unknown_type
  send_frames(w, {"KBF1", "HEARTBEAT", "{not json"});         // bad_json
  send_frames(w, {"KBF1", "READY", "{}"});                    // missing_field
  send_frames(w, {"KBF1", "HEARTBEAT", std::string((1 << 20) + 1, ' ')});  // oversized
  send(w, MessageType::kSubmit, {{"problems", "sim"}});      // wrong_direction
  send(w, MessageType::kHeartbeat, Json::object());          // unknown_peer
  Message bye = expect(w, MessageType::kDisconnect);
  EXPECT_EQ(bye.body["reason"], "register first");
  // A flood of 10,000 bad messages of every kind.
  const std::vector<std::vector<std::string>> bad = {
      {"KBF1"}, {"GET / HTTP/1.1", "x", "y"}, {"KBF1", "\xff\xfe", "{}"}, {"KBF1", "RESULT", "[1,2]"},
      {"KBF1", "RESULT", R"({"job_id":"x","attempt":1,"result":{}})"}};
  for (int i = 0; i < 10'000; ++i) send_frames(w, bad[i % bad.size()]);
  zmq::socket_t c = client();
  send(c, MessageType::kQuery, {{"what", "health"}, {"request_id", 7}});
  Message health = expect(c, MessageType::kReply);
  EXPECT_EQ(health.body["request_id"], 7);
  Result<wire::HealthReply> counters = wire::from_message<wire::HealthReply>(health);
  KB_ASSERT_OK(counters);
  EXPECT_TRUE(counters->db_up);
  EXPECT_FALSE(counters->draining);
  const double expected = 8 + 10'000;
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text = metrics();
    double total = 0;
    std::regex line(R"(kb_dropped_messages_total\{reason="[a-z_]+"\} (\d+))");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
      total += std::stod((*it)[1]);
    }
    if (total >= expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"bad_frame_count\"}"), 1 + 2000);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"bad_tag\"}"), 1 + 2000);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"unknown_type\"}"), 1 + 2000);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"bad_json\"}"), 1 + 2000);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"missing_field\"}"), 1 + 2000);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"oversized\"}"), 1);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"wrong_direction\"}"), 1);
  EXPECT_EQ(metric(text, "kb_dropped_messages_total{reason=\"unknown_peer\"}"), 1);
  EXPECT_EQ(register_worker(w, "still-works"), 1);  // and it still serves workers
}

// A worker's frame larger than any body (workers send no payload) never reaches the decoder:
// libzmq drops the connection at the frame's header, before buffering it (a 2 MiB frame here;
// the 256 MiB pack limit applied to workers before). The worker's socket reconnects and is served.
TEST_F(CoordinatorTest, AWorkerFrameLargerThanABodyDropsItsConnection) {
  start();
  zmq::socket_t w = worker();
  send_frames(w, {"KBF1", "HEARTBEAT", std::string((1 << 20) + 1, ' ')});  // a body too big
  send_frames(w, {"KBF1", "HEARTBEAT", std::string(2 << 20, ' ')});        // larger than a body
  const std::string oversized = "kb_dropped_messages_total{reason=\"oversized\"}";
  for (int i = 0; i < 100 && metric(metrics(), oversized) < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // time to decode a second one
  EXPECT_EQ(metric(metrics(), oversized), 1) << "the 2 MiB frame reached the decoder";
  zmq::socket_t again = worker();
  EXPECT_EQ(register_worker(again, "after-the-drop"), 1);
}

// An attacker's bodies (docs/security.md, threat 9): nested 200,000 deep from a worker and from a
// client (the coordinator died of SIGSEGV copying such a body), and a 64 KiB request_id, which is
// answered without the echo.
TEST_F(CoordinatorTest, DeepBodiesAreDroppedAndHugeRequestIdsAreNotEchoed) {
  start();
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  zmq::socket_t w = worker();
  send_frames(w, {"KBF1", "READY", R"({"name": "w", "software": {"x": )" + deep + "}}"});
  zmq::socket_t c = client();
  send_frames(c, {"KBF1", "QUERY", R"({"what": "health", "request_id": )" + deep + "}"});
  send(c, MessageType::kQuery, {{"what", "health"}, {"request_id", std::string(65536, 'x')}});
  Message health = expect(c, MessageType::kReply);
  EXPECT_FALSE(health.body.contains("request_id"));
  send(c, MessageType::kQuery, {{"what", "health"}, {"request_id", std::string(128, 'y')}});
  EXPECT_EQ(expect(c, MessageType::kReply).body["request_id"], std::string(128, 'y'));
  double bad_json = 0;
  for (int i = 0; i < 100 && bad_json < 2; ++i) {
    bad_json = metric(metrics(), "kb_dropped_messages_total{reason=\"bad_json\"}");
    if (bad_json < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(bad_json, 2);
  EXPECT_EQ(register_worker(w, "still-works"), 1);
}

TEST_F(CoordinatorTest, ADatabaseOutageDelaysTheAckButLosesNothing) {
  start();
  zmq::socket_t c = client();
  send(c, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {1}}});
  expect(c, MessageType::kReply);
  zmq::socket_t w = worker();
  register_worker(w, "sim-0");
  send(w, MessageType::kRequest, {{"credits", 1}});
  Message job = expect(w, MessageType::kJob);
  store_->down = true;
  send(w, MessageType::kResult, result_for(job));
  int status = 0;
  for (int i = 0; i < 100 && status != 503; ++i) {
    http_get(coordinator_->endpoints().http, "/healthz", &status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 503);
  send(w, MessageType::kHeartbeat, Json::object());  // the loop keeps serving meanwhile
  EXPECT_TRUE(nothing_but_heartbeats(w, 300));  // no ACK while the row is not committed
  send(w, MessageType::kHeartbeat, Json::object());
  store_->down = false;
  expect(w, MessageType::kAck);
  EXPECT_EQ(store_->result_count(), 1u);
  EXPECT_EQ(http_get(coordinator_->endpoints().http, "/healthz", &status).substr(0, 3), "ok\n");
  EXPECT_EQ(status, 200);
}

TEST_F(CoordinatorTest, SubmitChecksProblemsPresetsAndPacks) {
  start();
  zmq::socket_t c = client();
  const std::string bytes = "\x7f" "ELF pack bytes";
  const std::string hash = sha256_hex(bytes);
  send(c, MessageType::kSubmit, {{"problems", "L1_003"}, {"preset", "small"}, {"pack", hash}});
  Message e = expect(c, MessageType::kError);
  EXPECT_EQ(e.body["code"], "unknown_pack");
  send(c, MessageType::kSubmit, {{"problems", "L1_003"}, {"preset", "small"}, {"pack", hash}}, "other bytes");
  EXPECT_EQ(expect(c, MessageType::kError).body["code"], "bad_request");
  send(c, MessageType::kSubmit, {{"problems", "NOPE_999"}, {"preset", "small"}, {"pack", hash}});
  EXPECT_EQ(expect(c, MessageType::kError).body["code"], "bad_request");
  send(c, MessageType::kSubmit, {{"problems", "L1_003"}, {"preset", "no-such"}, {"pack", hash}});
  EXPECT_EQ(expect(c, MessageType::kError).body["code"], "bad_request");
  // The verification policy: fewer than 3 correctness trials is refused.
  send(c, MessageType::kSubmit, {{"problems", "L1_003"}, {"preset", "small"}, {"pack", hash}, {"trials", 0}}, bytes);
  Message few = expect(c, MessageType::kError);
  EXPECT_EQ(few.body["code"], "bad_request");
  EXPECT_NE(few.body["message"].get<std::string>().find("trials: the fleet runs 3..1000"), std::string::npos)
      << few.body.dump();
  send(c, MessageType::kSubmit,
       {{"problems", "kernelbench22"}, {"preset", "small"}, {"pack", hash}, {"gpu_models", {"A", "B"}}}, bytes);
  const auto ok = expect_reply<wire::SubmitReply>(c);
  EXPECT_EQ(ok.jobs, 44);
  EXPECT_TRUE(store_->has_pack_bytes(hash));
  send(c, MessageType::kQuery, {{"what", "pack"}, {"pack", hash}});
  EXPECT_TRUE(expect_reply<wire::PackQueryReply>(c).have);
  send(c, MessageType::kCancel, {{"run_id", ok.run_id}});
  const auto cancelled = expect_reply<wire::CancelReply>(c);
  EXPECT_EQ(cancelled.run_id, ok.run_id);
  EXPECT_TRUE(store_->is_cancelled(ok.run_id));
  // A worker fetches the pack by hash.
  zmq::socket_t w = worker();
  register_worker(w, "w0");
  send(w, MessageType::kPackRequest, {{"pack", hash}});
  Message pack = expect(w, MessageType::kPack);
  EXPECT_EQ(pack.payload, bytes);
}

TEST_F(CoordinatorTest, DrainDisconnectsWorkersAndExitsZero) {
  start();
  zmq::socket_t w = worker();
  register_worker(w, "w0");
  coordinator_->request_stop();
  Message bye = expect(w, MessageType::kDisconnect);
  EXPECT_EQ(bye.body["reason"], "draining");
  loop_.join();
  EXPECT_EQ(exit_code_, 0);
}

TEST_F(CoordinatorTest, LeasesFromBeforeARestartComeBackWithTheirWorker) {
  JobRecord r;
  r.id = 41, r.run_id = 9, r.problem_id = "sim", r.preset = "sim", r.state = "leased";
  r.attempt = 1, r.worker_id = 1;  // the fake store gives the first worker id 1
  open_jobs_ = {r};
  start();
  zmq::socket_t w = worker();
  register_worker(w, "sim-0", Json::array({{{"job_id", 41}, {"attempt", 1}}}));
  send(w, MessageType::kResult, {{"job_id", 41}, {"attempt", 1},
                                 {"result", {{"problem_id", "sim"}, {"preset", "sim"}}}});
  Message ack = expect(w, MessageType::kAck);
  EXPECT_EQ(ack.body["job_id"], 41);
  EXPECT_FALSE(ack.body.contains("rejected"));
}

// Lease fencing over the wire: a registered worker that names another's lease is refused, told
// so, and counted; the holder's result is then stored.
TEST_F(CoordinatorTest, AForgedResultIsRejectedCountedAndNotStored) {
  start();
  zmq::socket_t c = client();
  send(c, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {5}}});
  expect(c, MessageType::kReply);
  zmq::socket_t a = worker(), b = worker();
  register_worker(a, "sim-a");
  register_worker(b, "sim-b");
  send(a, MessageType::kRequest, {{"credits", 1}});
  Message job = expect(a, MessageType::kJob);
  EXPECT_TRUE(job.body["lease_id"].is_number_integer());
  send(b, MessageType::kResult, result_for(job));
  EXPECT_EQ(expect(b, MessageType::kAck).body["rejected"], "not_holder");
  EXPECT_EQ(metric(metrics(), "kb_results_rejected_total{reason=\"not_holder\"}"), 1);
  EXPECT_EQ(store_->result_count(), 0u);
  send(a, MessageType::kResult, result_for(job));
  EXPECT_FALSE(expect(a, MessageType::kAck).body.contains("rejected"));
  EXPECT_EQ(store_->result_count(), 1u);
}

// WORKER_CONTROL is answered with what was done to whom (wire::WorkerControlReply), as kb reads it.
TEST_F(CoordinatorTest, WorkerControlRepliesWithTheWorkerAndTheAction) {
  start();
  zmq::socket_t w = worker();
  register_worker(w, "sim-0");
  zmq::socket_t c = client();
  send(c, MessageType::kWorkerControl, {{"action", "drain"}, {"worker", "sim-0"}});
  const auto reply = expect_reply<wire::WorkerControlReply>(c);
  EXPECT_EQ(reply.worker, "sim-0");
  EXPECT_EQ(reply.action, "drain");
}

// kb cancel stops running jobs: their holder gets REVOKE.
TEST_F(CoordinatorTest, CancellingARunRevokesItsRunningJobs) {
  start();
  zmq::socket_t c = client();
  send(c, MessageType::kSubmit, {{"problems", "sim"}, {"sim_jobs", {5000}}});
  Message reply = expect(c, MessageType::kReply);
  zmq::socket_t w = worker();
  register_worker(w, "sim-0");
  send(w, MessageType::kRequest, {{"credits", 1}});
  Message job = expect(w, MessageType::kJob);
  send(c, MessageType::kCancel, {{"run_id", reply.body["run_id"]}});
  Message revoke = expect(w, MessageType::kRevoke);
  EXPECT_EQ(revoke.body["job_id"], job.body["job_id"]);
  EXPECT_EQ(revoke.body["reason"], "cancelled");
}

// BYE {final}: the worker is gone at once, not after liveness.
TEST_F(CoordinatorTest, AFinalByeEndsTheSessionAtOnce) {
  start();
  zmq::socket_t w = worker();
  register_worker(w, "sim-0");
  send(w, MessageType::kBye, {{"final", true}, {"release", Json::array()}});
  int64_t workers = -1;
  for (int i = 0; i < 50 && workers != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    workers = metric(metrics(), "kb_workers{state=\"idle\"}");
  }
  EXPECT_EQ(workers, 0);
}

TEST_F(CoordinatorTest, WritesTheEndpointsFile) {
  const std::string path = ::testing::TempDir() + "/kb-endpoints.json";
  CoordinatorConfig config;
  config.endpoints_file = path;
  start(config);
  std::ifstream in(path);
  const Json j = Json::parse(in);
  EXPECT_EQ(j["workers"], coordinator_->endpoints().workers);
  EXPECT_EQ(j["clients"], coordinator_->endpoints().clients);
  EXPECT_EQ(j["http"], coordinator_->endpoints().http);
  EXPECT_EQ(j["pid"], static_cast<int64_t>(::getpid()));
  EXPECT_NE(http_get(j["http"].get<std::string>(), "/metrics").find("\nkb_queue_depth 0\n"),
            std::string::npos);
}

TEST_F(CoordinatorTest, CurveAdmitsOnlyAllowListedKeys) {
  if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  const std::string dir = ::testing::TempDir();
  auto server = curve::generate_key_pair().value();
  auto allowed = curve::generate_key_pair().value();
  auto stranger = curve::generate_key_pair().value();
  KB_ASSERT_OK(curve::write_key_file(dir + "/server.key", server, /*replace=*/true));
  std::ofstream(dir + "/submitters.txt") << allowed.public_key << " ci-client\n";
  CoordinatorConfig config;
  config.curve_secret_key_file = dir + "/server.key";
  config.allow_lists.submitters = dir + "/submitters.txt";
  start(config);
  zmq::socket_t good(context_, zmq::socket_type::dealer), bad(context_, zmq::socket_type::dealer);
  wire::configure_socket(good);
  wire::configure_socket(bad);
  curve::configure_client(good, allowed, server.public_key);
  curve::configure_client(bad, stranger, server.public_key);
  good.connect(coordinator_->endpoints().clients);
  bad.connect(coordinator_->endpoints().clients);
  send(bad, MessageType::kQuery, {{"what", "health"}});
  send(good, MessageType::kQuery, {{"what", "health"}});
  EXPECT_EQ(expect_reply<wire::HealthReply>(good).queued, 0);
  EXPECT_TRUE(nothing_but_heartbeats(bad, 300));
  EXPECT_GE(metric(metrics(), "kb_auth_rejected_total"), 1);
}

// schemas/protocol.md: JOB carries the sha256 of its problem's spec file. It was added only to
// the messages sent at once (REVOKEs), never to the JOBs, which wait for their lease's commit.
TEST_F(CoordinatorTest, AJobOfARealProblemCarriesItsSpecHash) {
  start();
  zmq::socket_t c = client();
  const std::string bytes =
      "\x7f"
      "ELF pack bytes";
  send(c, MessageType::kSubmit,
       {{"problems", "L1_003"}, {"preset", "small"}, {"pack", sha256_hex(bytes)}}, bytes);
  expect(c, MessageType::kReply);
  zmq::socket_t w = worker();
  register_worker(w, "any-0");
  send(w, MessageType::kRequest, {{"credits", 1}});
  Message job = expect(w, MessageType::kJob);
  EXPECT_EQ(job.body["problem"], "L1_003");
  ASSERT_TRUE(job.body.contains("spec_hash")) << job.body.dump();
  EXPECT_EQ(job.body["spec_hash"].get<std::string>().size(), 64u);
}

// A request whose body has a field of the wrong type is counted like any malformed message, and
// answered, so that its client is told which field rather than left to time out.
TEST_F(CoordinatorTest, ASubmitWithAFieldOfTheWrongTypeIsAnsweredBadRequest) {
  start();
  zmq::socket_t c = client();
  send(c, MessageType::kSubmit,
       {{"problems", "sim"}, {"sim_jobs", {1}}, {"max_attempts", "3"}, {"request_id", 9}});
  Message error = expect(c, MessageType::kError);
  EXPECT_EQ(error.body["code"], "bad_request");
  EXPECT_EQ(error.body["request_id"], 9);
  EXPECT_EQ(error.body["message"],
            "SUBMIT: field 'max_attempts': expected an integer (int), got a string");
  EXPECT_EQ(metric(metrics(), "kb_dropped_messages_total{reason=\"missing_field\"}"), 1);
}

// BYE's flags were read with json::value(), which throws on a flag that is not a boolean: one
// such message from a registered worker would have ended the coordinator's event loop.
TEST_F(CoordinatorTest, AByeWithAStringFlagIsDroppedAndCountedNotACrash) {
  start();
  zmq::socket_t w = worker();
  register_worker(w, "sim-0");
  send(w, MessageType::kBye, {{"final", "yes"}, {"release", Json::array()}});
  send(w, MessageType::kPackRequest, {{"pack", std::string(64, '0')}});  // answered after the BYE
  EXPECT_EQ(expect(w, MessageType::kPack).body["missing"],
            true);  // still registered, still serving
  EXPECT_EQ(metric(metrics(), "kb_dropped_messages_total{reason=\"missing_field\"}"), 1);
}

}  // namespace
}  // namespace kb::coord
