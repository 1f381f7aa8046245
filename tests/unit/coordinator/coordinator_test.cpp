// The coordinator over real ZeroMQ sockets on tcp://127.0.0.1:* in this process, with a fake
// JobStore: the protocol's happy path, bad input, a database outage, SUBMIT's checks, drain, and
// the CURVE allow-list.
#include "coordinator/coordinator.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "common/curve_keys.h"
#include "common/sha256.h"
#include "common/zmq_messaging.h"
#include "tests/unit/coordinator/fake_job_store.h"

namespace kb::coord {
namespace {

using wire::Message;
using wire::MessageType;
using Json = nlohmann::json;

std::string http_get(const std::string& host_port, const std::string& path, int* status = nullptr) {
  namespace asio = boost::asio;
  asio::io_context io;
  std::string host;
  uint16_t port = 0;
  EXPECT_TRUE(split_host_port(host_port, &host, &port));
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address(host), port});
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string response;
  boost::system::error_code error;
  asio::read(socket, asio::dynamic_buffer(response), error);
  if (status) *status = std::stoi(response.substr(9, 3));
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// The value of one metric line ("name{labels} value"), or -1.
double metric(const std::string& text, const std::string& name_and_labels) {
  const size_t at = text.find("\n" + name_and_labels + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name_and_labels.size() + 2));
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void start(CoordinatorConfig config = {}) {
    config.handle_signals = false;
    config.problems_dir = KB_SOURCE_DIR "/problems";
    config.db.initial_backoff = std::chrono::milliseconds(20);
    config.db.max_backoff = std::chrono::milliseconds(50);
    auto store = std::make_unique<testing::FakeJobStore>();
    store_ = store.get();
    store_->open_jobs = open_jobs_;
    auto c = Coordinator::create(config, std::move(store));
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    coordinator_ = std::move(c.value());
    loop_ = std::thread([this] { exit_code_ = coordinator_->run(); });
  }
  void TearDown() override { stop(); }
  void stop() {
    if (!loop_.joinable()) return;
    coordinator_->request_stop();
    loop_.join();
  }

  zmq::socket_t connect(const std::string& endpoint) {
    zmq::socket_t s(context_, zmq::socket_type::dealer);
    wire::configure_socket(s);
    s.connect(endpoint);
    return s;
  }
  zmq::socket_t worker() { return connect(coordinator_->endpoints().workers); }
  zmq::socket_t client() { return connect(coordinator_->endpoints().clients); }

  static void send(zmq::socket_t& s, MessageType type, Json body, std::string payload = "") {
    ASSERT_TRUE(wire::send_message(s, Message{type, std::move(body), std::move(payload)}));
  }
  static void send_frames(zmq::socket_t& s, const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      s.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  // The next message of `type` (heartbeats skipped), or a failed expectation after timeout.
  static Message expect(zmq::socket_t& s, MessageType type, int timeout_ms = 5000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      auto received = wire::receive_message(s, false);
      if (!received) continue;
      EXPECT_TRUE(received->decoded.ok) << received->decoded.detail;
      if (received->decoded.message.type == MessageType::kHeartbeat && type != MessageType::kHeartbeat) continue;
      EXPECT_EQ(wire::to_string(received->decoded.message.type), wire::to_string(type))
          << received->decoded.message.body.dump();
      return received->decoded.message;
    }
    ADD_FAILURE() << "no " << wire::to_string(type) << " within " << timeout_ms << " ms";
    return Message{};
  }
  static bool nothing_but_heartbeats(zmq::socket_t& s, int ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      auto received = wire::receive_message(s, false);
      if (received && !(received->decoded.ok && received->decoded.message.type == MessageType::kHeartbeat)) {
        return false;
      }
    }
    return true;
  }
  int64_t register_worker(zmq::socket_t& w, const std::string& name, Json in_flight = Json::array()) {
    send(w, MessageType::kReady,
         {{"worker", name}, {"device", {{"kind", "sim"}, {"model", "sim"}}}, {"software", Json::object()},
          {"in_flight", in_flight}, {"protocol", 1}});
    Message welcome = expect(w, MessageType::kWelcome);
    EXPECT_EQ(welcome.body["heartbeat_ms"], 1000);
    return welcome.body.value("worker_id", int64_t{0});
  }
  std::string metrics() { return http_get(coordinator_->endpoints().http, "/metrics"); }
  // A RESULT for `job` echoing its lease token, problem and preset.
  static Json result_for(const Message& job, Json result = {{"status", "ok"}}) {
    result["problem_id"] = job.body["problem"];
    result["preset"] = job.body["preset"];
    return {{"job_id", job.body["job_id"]}, {"attempt", job.body["attempt"]},
            {"lease_id", job.body["lease_id"]}, {"result", result}, {"wall_ms", 12.5}};
  }

  zmq::context_t context_;
  std::vector<JobRecord> open_jobs_;
  testing::FakeJobStore* store_ = nullptr;
  std::unique_ptr<Coordinator> coordinator_;
  std::thread loop_;
  int exit_code_ = -1;
};

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
  EXPECT_EQ(health.body["db_up"], true);
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
  Message ok = expect(c, MessageType::kReply);
  EXPECT_EQ(ok.body["jobs"], 44);
  EXPECT_TRUE(store_->has_pack_bytes(hash));
  send(c, MessageType::kQuery, {{"what", "pack"}, {"pack", hash}});
  EXPECT_EQ(expect(c, MessageType::kReply).body["have"], true);
  send(c, MessageType::kCancel, {{"run_id", ok.body["run_id"]}});
  EXPECT_EQ(expect(c, MessageType::kReply).body["run_id"], ok.body["run_id"]);
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

TEST(CoordinatorBind, RefusesNonLoopbackWithoutCurveKeys) {
  EXPECT_TRUE(is_loopback_endpoint("tcp://127.0.0.1:*"));
  EXPECT_TRUE(is_loopback_endpoint("tcp://[::1]:5555"));
  EXPECT_TRUE(is_loopback_endpoint("ipc:///tmp/x"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://0.0.0.0:*"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://*:5555"));
  CoordinatorConfig config;
  config.workers_bind = "tcp://*:*";
  config.handle_signals = false;
  auto c = Coordinator::create(config, std::make_unique<testing::FakeJobStore>());
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("loopback"), std::string::npos);
}

TEST_F(CoordinatorTest, CurveAdmitsOnlyAllowListedKeys) {
  if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  const std::string dir = ::testing::TempDir();
  auto server = curve::generate_key_pair().value();
  auto allowed = curve::generate_key_pair().value();
  auto stranger = curve::generate_key_pair().value();
  ASSERT_TRUE(curve::write_key_file(dir + "/server.key", server).is_ok());
  std::ofstream(dir + "/allow.txt") << allowed.public_key << " ci-client\n";
  CoordinatorConfig config;
  config.curve_secret_key_file = dir + "/server.key";
  config.allow_keys_file = dir + "/allow.txt";
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
  EXPECT_EQ(expect(good, MessageType::kReply).body.contains("queued"), true);
  EXPECT_TRUE(nothing_but_heartbeats(bad, 300));
  EXPECT_GE(metric(metrics(), "kb_auth_rejected_total"), 1);
}

}  // namespace
}  // namespace kb::coord
