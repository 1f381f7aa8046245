#include "coordinator/bind_policy.h"

#include <arpa/inet.h>

#include <cctype>

namespace kb::coord {
namespace {

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool is_ipv4(const std::string& host) {
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& host) {
  in6_addr a{};
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

// A DNS name: letters, digits, '-' and '.', nothing else (no ';', ',' or spaces).
bool is_dns_name(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  }
  return true;
}

Result<TcpEndpoint> parse(const std::string& text, const std::string& what, bool star_port) {
  TcpEndpoint e;
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument(what + " '" + text + "': " + why);
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("expected HOST:PORT");
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (port == "*" && star_port) {
    e.port = -1;
  } else if (all_digits(port) && std::stoi(port) <= 65535) {
    e.port = std::stoi(port);
  } else {
    return bad("the port must be a number (0..65535)" + std::string(star_port ? " or *" : ""));
  }
  if (host.front() == '[') {
    if (host.back() != ']' || !is_ipv6(host.substr(1, host.size() - 2))) return bad("bad [IPv6] address");
    e.host = host.substr(1, host.size() - 2);
  } else if (host == "*" || is_ipv4(host) || is_dns_name(host)) {
    e.host = host;
  } else {
    return bad("the host must be an IPv4 address, [IPv6], a DNS name or *: exactly one endpoint");
  }
  return e;
}

}  // namespace

Result<TcpEndpoint> parse_tcp_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) {
    return Status::invalid_argument("endpoint '" + endpoint + "': expected tcp://HOST:PORT");
  }
  return parse(endpoint.substr(6), "endpoint", /*star_port=*/true);
}

Result<TcpEndpoint> parse_host_port(const std::string& host_port) {
  return parse(host_port, "HTTP address", /*star_port=*/false);
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

bool is_loopback_endpoint(const std::string& endpoint) {
  auto parsed = parse_tcp_endpoint(endpoint);
  return parsed.is_ok() && is_loopback_host(parsed->host);
}

Status check_binds(const BindRequest& r) {
  for (const std::string& bind : {r.workers, r.clients}) {
    if (r.curve && bind.rfind("ipc://", 0) == 0 && bind.size() > 6) continue;
    auto parsed = parse_tcp_endpoint(bind);
    if (!parsed.is_ok()) {
      return Status::invalid_argument(parsed.status().message() +
                                      (r.curve ? "" : " (ipc:// needs CURVE keys)"));
    }
    if (!r.curve && !is_loopback_host(parsed->host)) {
      return Status::invalid_argument(
          "refusing to bind " + bind + " without CURVE keys: only loopback addresses are "
          "allowed unless --curve-secret-key and the allow-lists (--allow-dir) are given");
    }
  }
  KB_ASSIGN_OR_RETURN(auto http, parse_host_port(r.http));
  if (!r.http_token && !is_loopback_host(http.host)) {
    return Status::invalid_argument("refusing to serve HTTP on " + r.http +
                                    " without --http-token-file: only loopback is allowed");
  }
  return Status::ok();
}

}  // namespace kb::coord
