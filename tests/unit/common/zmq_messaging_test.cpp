// Wire messages over real ZeroMQ sockets (tcp on loopback, ephemeral port), and CURVE key files.
#include "common/zmq_messaging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/curve_keys.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb::wire {
namespace {

std::optional<ReceivedMessage> receive_within(zmq::socket_t& socket, bool with_id,
                                              std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (auto m = receive_message(socket, with_id)) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

struct RouterDealerPair {
  zmq::context_t context;
  zmq::socket_t router{context, zmq::socket_type::router};
  zmq::socket_t dealer{context, zmq::socket_type::dealer};
  RouterDealerPair() {
    configure_socket(router);
    configure_socket(dealer);
    router.bind("tcp://127.0.0.1:*");
    dealer.set(zmq::sockopt::routing_id, std::string("worker-a"));
    dealer.connect(router.get(zmq::sockopt::last_endpoint));
  }
};

TEST(ZmqMessaging, RoundTripBothDirectionsWithPayload) {
  RouterDealerPair pair;
  Message ready{MessageType::kRequest, {{"credits", 2}}, ""};
  ASSERT_TRUE(send_message(pair.dealer, ready));
  auto got = receive_within(pair.router, true, std::chrono::seconds(5));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->routing_id, "worker-a");
  ASSERT_TRUE(got->decoded.ok) << got->decoded.detail;
  EXPECT_EQ(got->decoded.message.type, MessageType::kRequest);
  EXPECT_EQ(got->decoded.message.body["credits"], 2);

  Message pack{MessageType::kPack, {{"pack", "abc"}}, std::string("\0\1binary\xff", 9)};
  ASSERT_TRUE(send_message(pair.router, pack, "worker-a"));
  auto back = receive_within(pair.dealer, false, std::chrono::seconds(5));
  ASSERT_TRUE(back.has_value());
  ASSERT_TRUE(back->decoded.ok) << back->decoded.detail;
  EXPECT_EQ(back->decoded.message.payload, pack.payload);
}

TEST(ZmqMessaging, GarbageFramesDecodeAsErrorsNotCrashes) {
  RouterDealerPair pair;
  pair.dealer.send(zmq::buffer(std::string("NOTKB")), zmq::send_flags::sndmore);
  pair.dealer.send(zmq::buffer(std::string("READY")), zmq::send_flags::sndmore);
  pair.dealer.send(zmq::buffer(std::string("{}")), zmq::send_flags::none);
  auto got = receive_within(pair.router, true, std::chrono::seconds(5));
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->decoded.ok);
  EXPECT_EQ(got->decoded.error, DecodeError::kBadTag);
}

TEST(ZmqMessaging, SendToUnknownRouterPeerReportsFailureWhenMandatory) {
  RouterDealerPair pair;
  pair.router.set(zmq::sockopt::router_mandatory, 1);
  EXPECT_FALSE(send_message(pair.router, Message{MessageType::kHeartbeat, {}, ""}, "nobody"));
}

TEST(ZmqMessaging, ASharedPayloadArrivesWholeTwiceAndIsReleasedAfterSending) {
  RouterDealerPair pair;
  auto bytes = std::make_shared<const std::string>(std::string(100000, 'p'));
  std::weak_ptr<const std::string> watch = bytes;
  ASSERT_TRUE(send_message(pair.dealer, Message{MessageType::kHeartbeat, {}, ""}));
  auto hello = receive_within(pair.router, true, std::chrono::seconds(5));
  ASSERT_TRUE(hello);
  Message pack{MessageType::kPack, {{"pack", "h"}}, ""};
  ASSERT_TRUE(send_message_shared(pair.router, pack, bytes, hello->routing_id));
  ASSERT_TRUE(send_message_shared(pair.router, pack, bytes, hello->routing_id));
  bytes.reset();
  // A message after them: libzmq lets go of a frame once it moves on to the next one.
  ASSERT_TRUE(send_message(pair.router, Message{MessageType::kHeartbeat, {}, ""}, hello->routing_id));
  for (size_t size : {size_t{100000}, size_t{100000}, size_t{0}}) {
    auto got = receive_within(pair.dealer, false, std::chrono::seconds(5));
    ASSERT_TRUE(got && got->decoded.ok);
    EXPECT_EQ(got->decoded.message.payload.size(), size);
  }
  for (int i = 0; i < 100 && !watch.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(watch.expired());  // one buffer for both sends, released after sending
}

TEST(CurveKeys, KeyFilesRoundTripAndBadFilesAreExplained) {
  if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  const ::kb::test::TempDir dir("kb-curve-test");
  auto keys = curve::generate_key_pair();
  KB_ASSERT_OK(keys);
  KB_ASSERT_OK(curve::write_key_file((dir / "a.key").string(), keys.value()));
  EXPECT_EQ(std::filesystem::status(dir / "a.key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  auto loaded = curve::load_key_file((dir / "a.key").string(), true);
  KB_ASSERT_OK(loaded);
  EXPECT_EQ(loaded->public_key, keys->public_key);
  EXPECT_EQ(loaded->secret_key, keys->secret_key);

  KB_ASSERT_OK(curve::write_public_key_file((dir / "a.pub").string(), keys.value()));
  EXPECT_FALSE(curve::load_key_file((dir / "a.pub").string(), true).is_ok());
  KB_EXPECT_OK(curve::load_key_file((dir / "a.pub").string(), false));
}

TEST(CurveKeys, EncryptedRoundTrip) {
  if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  auto server = curve::generate_key_pair(), client = curve::generate_key_pair();
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router), dealer(context, zmq::socket_type::dealer);
  configure_socket(router);
  configure_socket(dealer);
  router.set(zmq::sockopt::curve_server, 1);
  router.set(zmq::sockopt::curve_secretkey, server->secret_key);
  router.bind("tcp://127.0.0.1:*");
  curve::configure_client(dealer, client.value(), server->public_key);
  dealer.connect(router.get(zmq::sockopt::last_endpoint));
  ASSERT_TRUE(send_message(dealer, Message{MessageType::kHeartbeat, {}, ""}));
  auto got = receive_within(router, true, std::chrono::seconds(5));
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->decoded.ok);
}

}  // namespace
}  // namespace kb::wire
