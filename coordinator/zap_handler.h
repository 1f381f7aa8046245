// The ZAP handler (ZeroMQ RFC 27) for the coordinator's CURVE sockets: a REP socket bound to
// inproc://zeromq.zap.01 in the coordinator's context, BEFORE the ROUTERs bind, serviced on the
// event loop. It accepts a CURVE handshake only when the peer's public key is in the allow-list
// (common/curve_keys.h, load_allow_list); every other request (another mechanism, an unknown key,
// a malformed request) is refused with 400 and counted.
//
// Thread safety: none; owned by the event loop.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace kb::coord {

inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

class ZapHandler {
 public:
  // Binds the REP socket; throws zmq::error_t when the endpoint is taken (one per context).
  ZapHandler(zmq::context_t& context, std::map<std::string, std::string> allowed_keys);

  zmq::socket_t& socket() { return socket_; }
  // Answers up to `max` waiting requests without blocking; returns how many.
  size_t serve(size_t max);
  uint64_t rejected() const { return rejected_; }
  uint64_t accepted() const { return accepted_; }

 private:
  bool answer_one();

  zmq::socket_t socket_;
  std::map<std::string, std::string> allowed_;  // Z85 public key -> name
  uint64_t rejected_ = 0, accepted_ = 0;
};

}  // namespace kb::coord
