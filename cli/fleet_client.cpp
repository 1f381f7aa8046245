#include "cli/fleet_client.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/curve_keys.h"
#include "common/protocol_messages.h"
#include "common/zmq_messaging.h"

namespace kb::cli {
namespace {

std::string seconds_text(std::chrono::milliseconds timeout) {
  char text[32];
  if (timeout.count() % 1000 == 0) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>(timeout.count() / 1000));
  } else {
    std::snprintf(text, sizeof text, "%.1f s", timeout.count() / 1000.0);
  }
  return text;
}

Status error_reply_status(const wire::ErrorMessage& error) {
  const std::string message = "coordinator: " + error.message;
  const std::string& code = error.code;
  if (code == "bad_request") return Status::invalid_argument(message);
  if (code == "unknown_pack") return Status::not_found(message);
  // Our key's role may not do this (docs/security.md): say so, not "internal".
  if (code == "forbidden") return Status::failed_precondition(message);
  return Status::internal(message);
}

}  // namespace

std::string normalize_endpoint(const std::string& endpoint) {
  if (endpoint.empty() || endpoint.find("://") != std::string::npos) return endpoint;
  return "tcp://" + endpoint;
}

Result<std::unique_ptr<FleetClient>> FleetClient::connect(const FleetConfig& config) {
  KB_TRY(require_coordinator(config));
  std::unique_ptr<FleetClient> client(new FleetClient());
  KB_TRY(client->init(config));
  return client;
}

Status FleetClient::init(const FleetConfig& config) {
  endpoint_ = normalize_endpoint(config.coordinator);
  std::random_device random;
  id_prefix_ = std::to_string(getpid()) + "-" + std::to_string(random()) + "-";
  try {
    socket_ = zmq::socket_t(context_, zmq::socket_type::dealer);
    wire::configure_socket(socket_, 1000);
    if (config.use_curve()) {
      KB_ASSIGN_OR_RETURN(const auto own,
                          curve::load_key_file(config.curve_key, /*require_secret=*/true));
      KB_ASSIGN_OR_RETURN(const auto server,
                          curve::load_key_file(config.coordinator_key, /*require_secret=*/false));
      curve::configure_client(socket_, own, server.public_key);
      curve_ = true;
    }
    // Handshake failures (a key the coordinator does not allow) come only through a monitor.
    const std::string monitor_endpoint = "inproc://kb-client-monitor";
    if (zmq_socket_monitor(socket_.handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) == 0) {
      monitor_ = zmq::socket_t(context_, zmq::socket_type::pair);
      monitor_.connect(monitor_endpoint);
    }
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& e) {
    return Status::invalid_argument("cannot connect to coordinator endpoint '" + endpoint_ +
                                    "' (expected tcp://HOST:PORT): " + e.what());
  }
  return Status::ok();
}

Status FleetClient::check_monitor() {
  if (!monitor_) return Status::ok();
  zmq::message_t event;
  while (monitor_.recv(event, zmq::recv_flags::dontwait)) {
    uint16_t id = 0;
    if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
    zmq::message_t address;  // the event's second frame
    if (event.more()) (void)monitor_.recv(address, zmq::recv_flags::none);
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      return Status::failed_precondition(
          "the coordinator at " + endpoint_ + " refused our CURVE key: add our public key (the " +
          "`public:` line of our key file, or its .pub), with a name, to the coordinator's allow-list "
          "of our role (submitters.txt or admins.txt; workers.txt for a worker)");
    }
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      return Status::failed_precondition(
          "the security handshake with the coordinator at " + endpoint_ + " failed: " +
          (curve_ ? "check that --coordinator-key is the coordinator's public key and that the "
                    "coordinator runs with CURVE keys"
                  : "the coordinator requires CURVE: pass --curve-key and --coordinator-key (see "
                    "`kb keygen`)"));
    }
  }
  return Status::ok();
}

Result<wire::Message> FleetClient::request(wire::Message message,
                                           std::chrono::milliseconds timeout) {
  const std::string request_id = id_prefix_ + std::to_string(next_id_++);
  message.body["request_id"] = request_id;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!wire::send_message(socket_, message)) {
    return Status::io_error("could not queue the request for the coordinator at " + endpoint_);
  }
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::vector<zmq::pollitem_t> items = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
    if (monitor_) items.push_back({monitor_.handle(), 0, ZMQ_POLLIN, 0});
    try {
      zmq::poll(items.data(), items.size(), left);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) return Status::internal("interrupted");
      return Status::io_error(std::string("poll: ") + e.what());
    }
    KB_TRY(check_monitor());
    while (auto received = wire::receive_message(socket_, /*with_routing_id=*/false)) {
      if (!received->decoded.ok) continue;  // not ours to fix; the deadline still holds
      wire::Message& reply = received->decoded.message;
      if (reply.body.value("request_id", std::string()) != request_id) continue;
      if (reply.type == wire::MessageType::kReply) return std::move(reply);
      if (const auto* error = std::get_if<wire::ErrorMessage>(&received->decoded.body)) {
        return error_reply_status(*error);
      }
    }
  }
  return Status::io_error("coordinator at " + endpoint_ + " did not answer within " +
                          seconds_text(timeout) +
                          " (is kb-coordinator running there? check --coordinator / KB_COORDINATOR)");
}

}  // namespace kb::cli
