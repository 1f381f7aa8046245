#include "common/zmq_messaging.h"

#include <vector>

namespace kb::wire {

void configure_socket(zmq::socket_t& socket, int high_water_mark) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, high_water_mark);
  socket.set(zmq::sockopt::rcvhwm, high_water_mark);
  // Frame-level limit: a frame over this makes libzmq drop the connection. Leave room for the
  // payload frame; the codec enforces the exact per-frame limits.
  socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxPayloadBytes + kMaxBodyBytes));
}

bool send_message(zmq::socket_t& socket, const Message& message, const std::string& routing_id) {
  std::vector<std::string> frames = encode(message);
  try {
    if (!routing_id.empty()) {
      if (!socket.send(zmq::buffer(routing_id), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        return false;
      }
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto more = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      // Once the first frame is queued, the rest of a multipart message is always accepted.
      if (!socket.send(zmq::buffer(frames[i]), more | zmq::send_flags::dontwait)) return false;
    }
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH with ROUTER_MANDATORY, or a closed context
  }
  return true;
}

bool send_message_shared(zmq::socket_t& socket, const Message& message,
                         std::shared_ptr<const std::string> payload, const std::string& routing_id) {
  std::vector<std::string> frames = encode(message);
  try {
    if (!routing_id.empty() &&
        !socket.send(zmq::buffer(routing_id), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return false;
    }
    for (const std::string& frame : frames) {
      if (!socket.send(zmq::buffer(frame), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        return false;
      }
    }
    // The frame holds a heap copy of the shared_ptr; libzmq calls the deleter when done with it.
    auto* keep = new std::shared_ptr<const std::string>(std::move(payload));
    zmq::message_t last(const_cast<char*>((*keep)->data()), (*keep)->size(),
                        [](void*, void* hint) { delete static_cast<std::shared_ptr<const std::string>*>(hint); },
                        keep);
    return socket.send(last, zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

std::optional<ReceivedMessage> receive_message(zmq::socket_t& socket, bool with_routing_id) {
  std::vector<std::string> frames;
  zmq::message_t part;
  if (!socket.recv(part, zmq::recv_flags::dontwait)) return std::nullopt;
  frames.push_back(part.to_string());
  ReceivedMessage received;
  // zmq_msg_gets fails (nullptr) on a frame without metadata: without CURVE, and on the routing-id
  // frame a ROUTER makes up itself; the peer's own frames carry the connection's User-Id.
  auto note_user = [&] {
    if (const char* user = zmq_msg_gets(part.handle(), "User-Id"); user && received.user_id.empty()) {
      received.user_id = user;
    }
  };
  note_user();
  while (part.more()) {
    // The rest of a multipart message has arrived with its first frame.
    (void)socket.recv(part, zmq::recv_flags::none);
    frames.push_back(part.to_string());
    note_user();
  }
  if (with_routing_id) {
    received.routing_id = frames.front();
    frames.erase(frames.begin());
  }
  received.decoded = decode(frames);
  return received;
}

}  // namespace kb::wire
