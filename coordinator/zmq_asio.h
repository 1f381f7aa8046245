// ZeroMQ socket readiness on a Boost.Asio io_context: calls `on_readable` on the loop whenever
// the socket may hold messages; the callback receives (non-blocking) until none is left or its
// budget is spent.
//
// ZMQ_FD is edge-triggered and shared by reads and writes: it signals only a change of
// ZMQ_EVENTS, and any zmq call on the socket (a send included) may consume the edge. So after
// every wake-up and every send (notify_sent()), ZMQ_EVENTS is read and the socket drained while
// it has ZMQ_POLLIN, and only then is the wait re-armed; a low-rate safety timer does the same in
// case an edge is lost anyway. The descriptor belongs to libzmq: it is released, never closed.
//
// Thread safety: none; everything runs on the io_context's (single) thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <zmq.hpp>

#include <chrono>
#include <functional>

namespace kb::coord {

class ZmqReadiness {
 public:
  // on_readable(max) receives at most `max` messages and returns how many it took.
  using OnReadable = std::function<size_t(size_t max)>;
  static constexpr size_t kBudgetPerTurn = 256;  // then yield to the loop's other work
  static constexpr std::chrono::milliseconds kSafetyPeriod{100};

  ZmqReadiness(boost::asio::io_context& io, zmq::socket_t& socket, OnReadable on_readable);
  ~ZmqReadiness();
  ZmqReadiness(const ZmqReadiness&) = delete;
  ZmqReadiness& operator=(const ZmqReadiness&) = delete;

  void start();
  // After sending on the socket: the send may have consumed the read edge.
  void notify_sent();
  void stop();

 private:
  void arm();
  void check();  // drain while POLLIN, then arm
  void schedule_check();
  void arm_safety_timer();
  bool readable();

  boost::asio::io_context& io_;
  zmq::socket_t& socket_;
  OnReadable on_readable_;
  boost::asio::posix::stream_descriptor descriptor_;
  boost::asio::steady_timer safety_timer_;
  bool armed_ = false, check_posted_ = false, stopped_ = true;
};

}  // namespace kb::coord
