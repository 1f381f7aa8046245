// The coordinator over real ZeroMQ sockets on tcp://127.0.0.1:* in this process, with a fake
// JobStore (fake_job_store.h): the fixture shared by coordinator_test.cpp and
// coordinator_roles_test.cpp. start() runs the coordinator's loop on a thread; worker() and
// client() connect plain DEALERs; expect() waits for one message of a type.
//
// Thread safety: one fixture per test.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "common/zmq_messaging.h"
#include "coordinator/coordinator.h"
#include "tests/support/assert_ok.h"
#include "tests/unit/coordinator/fake_job_store.h"

namespace kb::coord::testing {

using wire::Message;
using wire::MessageType;
using Json = nlohmann::json;

using wire::Message;
using wire::MessageType;
using Json = nlohmann::json;

inline std::string http_get(const std::string& host_port, const std::string& path, int* status = nullptr) {
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
inline double metric(const std::string& text, const std::string& name_and_labels) {
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
    auto store = std::make_unique<FakeJobStore>();
    store_ = store.get();
    store_->open_jobs = open_jobs_;
    auto c = Coordinator::create(config, std::move(store));
    KB_ASSERT_OK(c);
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
  // The next REPLY read as R (a reply struct of protocol_messages.h), as `kb` reads it.
  template <typename R>
  static R expect_reply(zmq::socket_t& s) {
    Result<R> reply = wire::from_message<R>(expect(s, MessageType::kReply));
    EXPECT_TRUE(reply.is_ok()) << reply.status().to_string();
    return reply.is_ok() ? reply.value() : R{};
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
         {{"worker", name}, {"device", {{"kind", "sim"}, {"model", "sim"}}},
          {"software", {{"kbfleet", coordinator_version()}}},
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
  FakeJobStore* store_ = nullptr;
  std::unique_ptr<Coordinator> coordinator_;
  std::thread loop_;
  int exit_code_ = -1;
};

}  // namespace kb::coord::testing
