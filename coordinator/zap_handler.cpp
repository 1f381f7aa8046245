#include "coordinator/zap_handler.h"

#include <vector>

namespace kb::coord {

bool role_admitted(const std::string& domain, Role role) {
  if (domain == kWorkersDomain) return role == Role::kWorker;
  if (domain == kClientsDomain) return role == Role::kSubmitter || role == Role::kAdmin;
  return false;
}

ZapHandler::ZapHandler(zmq::context_t& context, AllowLists allowed)
    : socket_(context, zmq::socket_type::rep), allowed_(std::move(allowed)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind(kZapEndpoint);
}

size_t ZapHandler::serve(size_t max) {
  size_t n = 0;
  while (n < max && answer_one()) ++n;
  return n;
}

// Request frames: version "1.0", request id, domain, address, routing id, mechanism, credentials.
// Reply frames: version, request id, status code, status text, user id, metadata.
bool ZapHandler::answer_one() {
  std::vector<std::string> frames;
  zmq::message_t part;
  try {
    if (!socket_.recv(part, zmq::recv_flags::dontwait)) return false;
    frames.push_back(part.to_string());
    while (part.more()) {
      (void)socket_.recv(part, zmq::recv_flags::none);
      frames.push_back(part.to_string());
    }
  } catch (const zmq::error_t&) {
    return false;
  }
  std::string code = "400", text = "malformed ZAP request", user;
  if (frames.size() >= 6 && frames[0] == "1.0") {
    text = "unknown key";
    if (frames[5] == "CURVE" && frames.size() == 7 && frames[6].size() == 32) {
      char z85[41] = {};
      zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(frames[6].data()), 32);
      auto it = allowed_.find(z85);
      if (it != allowed_.end() && !role_admitted(frames[2], it->second.role)) {
        text = std::string("a ") + to_string(it->second.role) + " key is not admitted here";
      } else if (it != allowed_.end()) {
        code = "200", text = "OK";
        user = user_id_of(it->second);
      }
    }
  }
  code == "200" ? ++accepted_ : ++rejected_;
  const std::string request_id = frames.size() >= 2 ? frames[1] : "";
  const std::vector<std::string> reply = {"1.0", request_id, code, text, user, ""};
  try {
    for (size_t i = 0; i < reply.size(); ++i) {
      socket_.send(zmq::buffer(reply[i]),
                   i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  } catch (const zmq::error_t&) {
  }
  return true;
}

}  // namespace kb::coord
