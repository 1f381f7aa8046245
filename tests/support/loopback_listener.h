// LoopbackListener: a TCP socket listening on 127.0.0.1 at an ephemeral port, for the tests that
// must show that nothing connected to it (a sandboxed job trying to reach the network): hand out
// port(), then ask connection_arrived(). Non-blocking; closed with the object.
//
// Thread safety: one owner.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace kb::test {

class LoopbackListener {
 public:
  // Throws std::system_error, which gtest reports as the test's failure, when it cannot listen.
  LoopbackListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd_ < 0) fail("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
    if (::listen(fd_, 4) != 0) fail("listen");
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackListener() { ::close(fd_); }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  uint16_t port() const { return port_; }
  // Whether a connection is waiting (it is accepted and closed).
  bool connection_arrived() const {
    const int fd = ::accept(fd_, nullptr, nullptr);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const int error = errno;
    if (fd_ >= 0) ::close(fd_);
    throw std::system_error(error, std::generic_category(), what);
  }

  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace kb::test
