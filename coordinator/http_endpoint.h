// The daemons' HTTP endpoint (Boost.Beast, HTTP/1.1, one request per connection): GET and HEAD,
// answered by a handler. Plain text, no TLS. It binds loopback unless a bearer token is
// configured (bind_policy.h); with a token every request must carry `Authorization: Bearer TOKEN`
// or gets 401.
//
// Two kinds of handler: a Handler answers at once on the event loop (/healthz, /metrics); an
// AsyncHandler is given the target and a Respond to call later, exactly once, from any thread
// (the coordinator's dashboard answers from its database thread, so a slow query never holds the
// loop). Respond posts the answer back to the loop, which writes it.
//
// Thread safety: bind/start/stop/address/port on the io_context's thread; a Respond from any.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kb::coord {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra: name, value
};

class HttpEndpoint {
 public:
  using Handler = std::function<HttpResponse(const std::string& target)>;
  using Respond = std::function<void(HttpResponse)>;
  using AsyncHandler = std::function<void(const std::string& target, Respond respond)>;

  // `host_port`: "127.0.0.1:0" (port 0 = any free port; see port()).
  static Result<std::unique_ptr<HttpEndpoint>> bind(boost::asio::io_context& io,
                                                   const std::string& host_port, Handler handler,
                                                   std::string token = {});
  static Result<std::unique_ptr<HttpEndpoint>> bind_async(boost::asio::io_context& io,
                                                          const std::string& host_port,
                                                          AsyncHandler handler,
                                                          std::string token = {});
  void start();
  void stop();
  std::string address() const;  // "127.0.0.1:PORT"
  uint16_t port() const;

 private:
  HttpEndpoint(boost::asio::io_context& io, AsyncHandler handler, std::string token);
  void accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  AsyncHandler handler_;
  std::string token_;  // "" = none required
};

// Splits "HOST:PORT" ("[::1]:0" for IPv6); false when it is not of that form.
bool split_host_port(const std::string& host_port, std::string* host, uint16_t* port);

}  // namespace kb::coord
