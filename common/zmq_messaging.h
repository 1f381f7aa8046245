// Moving wire-protocol messages (common/wire_protocol.h) over ZeroMQ sockets (cppzmq), shared by
// the coordinator, the worker and the CLI.
//
// ROUTER sockets prefix every message with the peer's routing id; DEALER sockets do not. Both
// calls are non-blocking: a message that cannot be queued now (no peer, high-water mark) is not
// sent and send_message returns false; the caller counts it. Decoding never trusts the input:
// a bad message comes back as a DecodeResult with ok == false (see wire_protocol.h).
//
// Thread safety: a ZeroMQ socket belongs to one thread; these functions add no locking.
#pragma once

#include <zmq.hpp>

#include <memory>
#include <optional>
#include <string>

#include "common/wire_protocol.h"

namespace kb::wire {

// The socket options every kbfleet socket gets: no linger on close, a receive limit just over the
// protocol's largest message (libzmq drops a peer that sends more), and the given high-water mark.
void configure_socket(zmq::socket_t& socket, int high_water_mark = 100000);

// Sends on a DEALER (routing_id empty) or a ROUTER (routing_id = the peer). False when the
// message could not be queued without blocking, or when a ROUTER's peer is gone.
bool send_message(zmq::socket_t& socket, const Message& message,
                  const std::string& routing_id = {});

// Sends `message` with `payload` as its payload frame without copying the bytes: ZeroMQ keeps a
// reference to them until the frame has gone out, so many queued sends of one pack share one
// buffer (the coordinator's PACK replies). message.payload must be empty.
bool send_message_shared(zmq::socket_t& socket, const Message& message,
                         std::shared_ptr<const std::string> payload,
                         const std::string& routing_id = {});

struct ReceivedMessage {
  std::string routing_id;  // ROUTER only
  // The ZAP User-Id libzmq attached to the connection ("" without CURVE): the coordinator's
  // roles come from here (coordinator/access_control.h), never from the body.
  std::string user_id;
  DecodeResult decoded;
};

// Receives one whole message if one is waiting, without blocking; nullopt when none is.
// with_routing_id: the socket is a ROUTER (the first frame is the peer's id).
std::optional<ReceivedMessage> receive_message(zmq::socket_t& socket, bool with_routing_id);

}  // namespace kb::wire
