// Where the coordinator may listen (coordinator/bind_policy.h): endpoints are parsed, not
// prefix-matched. Issue 13's `tcp://127.0.0.1:1;0.0.0.0:5555` passed a prefix check.
#include "coordinator/bind_policy.h"

#include <gtest/gtest.h>

#include "coordinator/coordinator.h"
#include "tests/support/assert_ok.h"
#include "tests/unit/coordinator/fake_job_store.h"

namespace kb::coord {
namespace {

TEST(BindPolicy, ParsesExactlyOneTcpEndpoint) {
  EXPECT_EQ(parse_tcp_endpoint("tcp://127.0.0.1:5555").value().port, 5555);
  EXPECT_EQ(parse_tcp_endpoint("tcp://127.0.0.1:*").value().port, -1);
  EXPECT_EQ(parse_tcp_endpoint("tcp://[::1]:7").value().host, "::1");
  EXPECT_EQ(parse_tcp_endpoint("tcp://localhost:7").value().host, "localhost");
  for (const char* bad : {"tcp://127.0.0.1:1;0.0.0.0:5555", "tcp://127.0.0.1:1,tcp://0.0.0.0:2",
                          "tcp://127.0.0.1", "tcp://127.0.0.1:", "tcp://127.0.0.1:99999",
                          "tcp://127.0.0.1:5x", "tcp://[::1:5", "tcp://:5", "tcp://a b:5",
                          "udp://127.0.0.1:5", "127.0.0.1:5", "tcp://127.0.0.1:5 "}) {
    EXPECT_FALSE(parse_tcp_endpoint(bad).is_ok()) << bad;
  }
}

TEST(BindPolicy, LoopbackIsParsedNotPrefixMatched) {
  EXPECT_TRUE(is_loopback_endpoint("tcp://127.0.0.1:*"));
  EXPECT_TRUE(is_loopback_endpoint("tcp://127.8.9.10:1"));
  EXPECT_TRUE(is_loopback_endpoint("tcp://[::1]:5555"));
  EXPECT_TRUE(is_loopback_endpoint("tcp://localhost:5555"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://127.0.0.1:1;0.0.0.0:5555"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://127.0.0.1.evil.example:5555"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://0.0.0.0:*"));
  EXPECT_FALSE(is_loopback_endpoint("tcp://*:5555"));
  EXPECT_FALSE(is_loopback_endpoint("ipc:///tmp/x"));
  EXPECT_FALSE(is_loopback_endpoint("inproc://x"));
}

TEST(BindPolicy, WithoutKeysOnlyLoopbackAndNoIpc) {
  const std::string lo = "tcp://127.0.0.1:*", http = "127.0.0.1:0";
  KB_EXPECT_OK(check_binds({lo, lo, http, false, false}));
  EXPECT_FALSE(check_binds({"tcp://127.0.0.1:1;0.0.0.0:5555", lo, http, false, false}).is_ok());
  EXPECT_FALSE(check_binds({lo, "tcp://0.0.0.0:5556", http, false, false}).is_ok());
  EXPECT_FALSE(check_binds({"ipc:///tmp/kb.sock", lo, http, false, false}).is_ok());
  KB_EXPECT_OK(check_binds({"tcp://0.0.0.0:5555", "ipc:///tmp/kb.sock", http, true, false}));
  EXPECT_FALSE(check_binds({"tcp://0.0.0.0:5555;x", lo, http, true, false}).is_ok());
}

TEST(BindPolicy, HttpOffLoopbackNeedsATokenEvenWithKeys) {
  const std::string lo = "tcp://127.0.0.1:*";
  EXPECT_FALSE(check_binds({lo, lo, "0.0.0.0:9100", true, false}).is_ok());
  KB_EXPECT_OK(check_binds({lo, lo, "0.0.0.0:9100", true, true}));
  KB_EXPECT_OK(check_binds({lo, lo, "[::1]:0", false, false}));
  EXPECT_FALSE(check_binds({lo, lo, "127.0.0.1:x", false, false}).is_ok());
}

TEST(BindPolicy, TheCoordinatorRefusesABadBindAtCreate) {
  CoordinatorConfig config;
  config.workers_bind = "tcp://127.0.0.1:1;0.0.0.0:5555";
  config.handle_signals = false;
  auto c = Coordinator::create(config, std::make_unique<testing::FakeJobStore>());
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kb::coord
