// The ZAP handler (ZeroMQ RFC 27) for the coordinator's CURVE sockets: a REP socket bound to
// inproc://zeromq.zap.01 in the coordinator's context, BEFORE the ROUTERs bind, serviced on the
// event loop. It accepts a CURVE handshake only when the peer's public key is in the allow-lists
// (access_control.h) with a role that belongs on that socket: the workers' socket (ZAP domain
// kWorkersDomain) admits worker keys, the clients' socket (kClientsDomain) submitter and admin
// keys. The accepted key's "<role>:<name>" is the ZAP User-Id, which libzmq attaches to every
// message of that connection. Every other request (another mechanism, an unknown key, a key of
// the wrong role, a malformed request) is refused with 400 and counted.
//
// reload() swaps the allow-lists (SIGHUP): new handshakes see the new lists; connections already
// admitted keep their User-Id (drop a key and restart peers, or the coordinator, to cut them).
//
// Thread safety: none; owned by the event loop.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <string>

#include "coordinator/access_control.h"

namespace kb::coord {

inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
inline constexpr const char* kWorkersDomain = "kbfleet-workers";
inline constexpr const char* kClientsDomain = "kbfleet-clients";

class ZapHandler {
 public:
  // Binds the REP socket; throws zmq::error_t when the endpoint is taken (one per context).
  ZapHandler(zmq::context_t& context, AllowLists allowed);

  zmq::socket_t& socket() { return socket_; }
  void reload(AllowLists allowed) { allowed_ = std::move(allowed); }
  size_t keys() const { return allowed_.size(); }
  // Answers up to `max` waiting requests without blocking; returns how many.
  size_t serve(size_t max);
  uint64_t rejected() const { return rejected_; }
  uint64_t accepted() const { return accepted_; }

 private:
  bool answer_one();

  zmq::socket_t socket_;
  AllowLists allowed_;
  uint64_t rejected_ = 0, accepted_ = 0;
};

// Whether a key of `role` may connect to the socket of ZAP `domain`.
bool role_admitted(const std::string& domain, Role role);

}  // namespace kb::coord
