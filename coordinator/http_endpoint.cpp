#include "coordinator/http_endpoint.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <charconv>

namespace kb::coord {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::chrono::seconds kRequestTimeout{10};

// One connection: read a request, answer it, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpEndpoint::AsyncHandler& handler, const std::string& token)
      : stream_(std::move(socket)), handler_(handler), token_(token) {}

  void start() {
    stream_.expires_after(kRequestTimeout);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->on_read(error); });
  }

 private:
  void on_read(beast::error_code error) {
    if (error) return;
    if (!token_.empty() && !authorized()) {
      write({401, "text/plain; charset=utf-8", "unauthorized: send Authorization: Bearer TOKEN\n"});
    } else if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      write({405, "text/plain; charset=utf-8", "method not allowed\n"});
    } else {
      // The handler may answer from another thread: the answer comes back to this session's
      // executor (the loop) before anything touches the stream.
      handler_(std::string(request_.target()), [self = shared_from_this()](HttpResponse answer) {
        asio::post(self->stream_.get_executor(), [self, answer = std::move(answer)]() mutable {
          self->write(std::move(answer));
        });
      });
    }
  }

  void write(HttpResponse answer) {
    response_.version(request_.version());
    response_.result(static_cast<http::status>(answer.status));
    response_.set(http::field::content_type, answer.content_type);
    response_.set(http::field::connection, "close");
    for (const auto& [name, value] : answer.headers) response_.set(name, value);
    response_.body() = std::move(answer.body);
    response_.prepare_payload();
    stream_.expires_after(kRequestTimeout);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  // Compares in time independent of where the first difference is.
  bool authorized() const {
    const auto it = request_.find(http::field::authorization);
    if (it == request_.end()) return false;
    const std::string given(it->value()), expected = "Bearer " + token_;
    unsigned char diff = given.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < given.size() && i < expected.size(); ++i) diff |= given[i] ^ expected[i];
    return diff == 0;
  }

  beast::tcp_stream stream_;
  const HttpEndpoint::AsyncHandler& handler_;
  const std::string& token_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

bool split_host_port(const std::string& host_port, std::string* host, uint16_t* port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) return false;
  *host = host_port.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const char* first = host_port.data() + colon + 1;
  const char* last = host_port.data() + host_port.size();
  auto [end, error] = std::from_chars(first, last, *port);
  return error == std::errc() && end == last;
}

HttpEndpoint::HttpEndpoint(asio::io_context& io, AsyncHandler handler, std::string token)
    : io_(io), acceptor_(io), handler_(std::move(handler)), token_(std::move(token)) {}

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::bind(asio::io_context& io,
                                                       const std::string& host_port, Handler handler,
                                                       std::string token) {
  return bind_async(
      io, host_port,
      [handler = std::move(handler)](const std::string& target, Respond respond) {
        respond(handler(target));
      },
      std::move(token));
}

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::bind_async(asio::io_context& io,
                                                               const std::string& host_port,
                                                               AsyncHandler handler,
                                                               std::string token) {
  std::string host;
  uint16_t port = 0;
  if (!split_host_port(host_port, &host, &port)) {
    return Status::invalid_argument("--http-bind '" + host_port + "': expected HOST:PORT");
  }
  if (host == "localhost") host = "127.0.0.1";
  beast::error_code error;
  const asio::ip::address address = asio::ip::make_address(host, error);
  if (error) return Status::invalid_argument("--http-bind '" + host_port + "': not an IP address");
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint(io, std::move(handler), std::move(token)));
  tcp::acceptor& acceptor = endpoint->acceptor_;
  const tcp::endpoint where(address, port);
  acceptor.open(where.protocol(), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(where, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) return Status::io_error("--http-bind '" + host_port + "': " + error.message());
  return endpoint;
}

void HttpEndpoint::start() { accept(); }

void HttpEndpoint::stop() {
  beast::error_code ignored;
  acceptor_.close(ignored);
}

void HttpEndpoint::accept() {
  acceptor_.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error) {
      if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    } else {
      std::make_shared<Session>(std::move(socket), handler_, token_)->start();
    }
    accept();
  });
}

std::string HttpEndpoint::address() const {
  beast::error_code error;
  const tcp::endpoint local = acceptor_.local_endpoint(error);
  if (error) return "";
  const std::string host = local.address().to_string();
  return (local.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(local.port());
}

uint16_t HttpEndpoint::port() const {
  beast::error_code error;
  return acceptor_.local_endpoint(error).port();
}

}  // namespace kb::coord
