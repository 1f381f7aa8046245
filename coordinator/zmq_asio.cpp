#include "coordinator/zmq_asio.h"

#include <boost/asio/post.hpp>

namespace kb::coord {

ZmqReadiness::ZmqReadiness(boost::asio::io_context& io, zmq::socket_t& socket, OnReadable on_readable)
    : io_(io),
      socket_(socket),
      on_readable_(std::move(on_readable)),
      descriptor_(io, socket.get(zmq::sockopt::fd)),
      safety_timer_(io) {}

ZmqReadiness::~ZmqReadiness() {
  stop();
  descriptor_.release();  // libzmq owns the fd
}

void ZmqReadiness::start() {
  stopped_ = false;
  schedule_check();
  arm_safety_timer();
}

void ZmqReadiness::stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  descriptor_.cancel(ignored);
  safety_timer_.cancel();
}

void ZmqReadiness::notify_sent() { schedule_check(); }

bool ZmqReadiness::readable() {
  try {
    return (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t&) {
    return false;  // the socket or its context is closing
  }
}

void ZmqReadiness::schedule_check() {
  if (check_posted_ || stopped_) return;
  check_posted_ = true;
  boost::asio::post(io_, [this] {
    check_posted_ = false;
    check();
  });
}

void ZmqReadiness::check() {
  if (stopped_) return;
  size_t taken = 0;
  while (readable()) {
    if (taken >= kBudgetPerTurn) {  // more waiting: come back after the loop's other handlers
      schedule_check();
      return;
    }
    const size_t n = on_readable_(kBudgetPerTurn - taken);
    if (n == 0) break;
    taken += n;
    if (stopped_) return;
  }
  arm();
}

void ZmqReadiness::arm() {
  if (armed_ || stopped_) return;
  armed_ = true;
  descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& error) {
                           armed_ = false;
                           if (!error) check();
                         });
}

void ZmqReadiness::arm_safety_timer() {
  if (stopped_) return;
  safety_timer_.expires_after(kSafetyPeriod);
  safety_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    check();
    arm_safety_timer();
  });
}

}  // namespace kb::coord
