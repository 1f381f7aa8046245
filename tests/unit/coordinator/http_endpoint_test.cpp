// The HTTP endpoint (coordinator/http_endpoint.h): an asynchronous handler may answer later from
// another thread, and the loop serves other requests meanwhile; extra headers reach the client.
#include "coordinator/http_endpoint.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>

namespace kb::coord {
namespace {

namespace asio = boost::asio;

// GET `target` on 127.0.0.1:port; the whole answer (headers and body) as text.
std::string get(uint16_t port, const std::string& target) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: test\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string answer;
  boost::system::error_code error;
  asio::read(socket, asio::dynamic_buffer(answer), error);  // until the server closes
  return answer;
}

TEST(HttpEndpoint, SlowAsyncAnswerDoesNotHoldTheLoop) {
  asio::io_context io;
  std::vector<std::thread> slow_answers;
  auto endpoint = HttpEndpoint::bind_async(
      io, "127.0.0.1:0", [&](const std::string& target, HttpEndpoint::Respond respond) {
        if (target == "/slow") {
          slow_answers.emplace_back([respond] {
            std::this_thread::sleep_for(std::chrono::milliseconds(400));
            respond({200, "text/plain", "slow\n", {{"X-Answered-By", "worker thread"}}});
          });
        } else {
          respond({200, "text/plain", "fast\n"});
        }
      });
  KB_ASSERT_OK(endpoint);
  endpoint.value()->start();
  const uint16_t port = endpoint.value()->port();
  std::thread loop([&] {
    auto guard = asio::make_work_guard(io);
    io.run();
  });
  auto slow = std::async(std::launch::async, [port] { return get(port, "/slow"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(get(port, "/fast").find("fast"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  const std::string answer = slow.get();
  EXPECT_NE(answer.find("X-Answered-By: worker thread"), std::string::npos);
  EXPECT_NE(answer.find("slow"), std::string::npos);
  io.stop();
  loop.join();
  for (std::thread& t : slow_answers) t.join();
}

}  // namespace
}  // namespace kb::coord
