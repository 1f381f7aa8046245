// Where the coordinator may listen (docs/security.md). Endpoints are parsed, not prefix-matched:
// a ZeroMQ bind is exactly `tcp://HOST:PORT` (PORT a number or `*`; HOST an IPv4 address, `[IPv6]`,
// `localhost` or `*`), one endpoint, nothing after the port; `ipc://PATH` only with CURVE keys
// (a socket file's permissions are not an authentication). Without CURVE keys both ROUTERs must be
// on loopback (127.0.0.0/8, [::1], localhost). The HTTP endpoint (`HOST:PORT`) must be on loopback
// unless an HTTP token is configured, whatever the CURVE setting: /metrics names workers and
// runs.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "common/status.h"

namespace kb::coord {

struct TcpEndpoint {
  std::string host;  // without brackets: "127.0.0.1", "::1", "localhost", "*"
  int port = -1;     // -1 = '*' (any free port)
};

// kInvalidArgument saying what is wrong unless `endpoint` is exactly tcp://HOST:PORT.
Result<TcpEndpoint> parse_tcp_endpoint(const std::string& endpoint);
// HOST:PORT for the HTTP endpoint (port a number, 0 = any).
Result<TcpEndpoint> parse_host_port(const std::string& host_port);
bool is_loopback_host(const std::string& host);
// True only for a well-formed tcp:// endpoint on a loopback host (never ipc:// or inproc://).
bool is_loopback_endpoint(const std::string& endpoint);

struct BindRequest {
  std::string workers, clients, http;
  bool curve = false;       // CURVE keys and allow-lists are configured
  bool http_token = false;  // the HTTP endpoint requires a bearer token
};
Status check_binds(const BindRequest& request);

}  // namespace kb::coord
