// The kbfleet wire protocol's message codec (schemas/protocol.md): one message is a sequence of
// ZeroMQ frames (after the ROUTER's identity frame, which the transport strips):
//
//   frame 0  protocol tag and version, "KBF1"
//   frame 1  message type, e.g. "READY", "JOB", "RESULT"
//   frame 2  body: a JSON object (at most kMaxBodyBytes)
//   frame 3  optional binary payload (kernel pack bytes; at most kMaxPayloadBytes)
//
// decode() never trusts its input: a wrong tag, an unknown type, a body that is not a JSON object
// or that its type's struct (protocol_messages.h) cannot read, a frame count out of range or an
// oversized frame is rejected with a DecodeError saying which (the coordinator counts them by kind
// and drops the message; it never crashes on network input). A message it accepts comes with its
// body read, once, into its type's struct (DecodeResult::body), which is what the handlers take.
//
// Thread safety: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol_messages.h"
#include "common/status.h"

namespace kb::wire {

inline constexpr std::string_view kProtocolTag = "KBF1";
// READY's "protocol": the message set and fields this build speaks. A coordinator refuses a worker
// of another protocol version, naming both (schemas/protocol.md, Versions).
inline constexpr int kProtocolVersion = 1;
// kbfleet software versions ("MAJOR.MINOR.PATCH") that may share a fleet: same MAJOR, and same
// MINOR while MAJOR is 0.
bool software_compatible(const std::string& a, const std::string& b);
inline constexpr size_t kMaxBodyBytes = size_t{1} << 20;      // 1 MiB of JSON
inline constexpr size_t kMaxPayloadBytes = size_t{256} << 20;  // 256 MiB: a kernel pack

// Why a message was dropped; each kind is counted separately in /metrics.
enum class DecodeError {
  kBadFrameCount,  // fewer than 3 or more than 4 frames
  kBadTag,         // frame 0 is not "KBF1" (another protocol or version)
  kUnknownType,    // frame 1 names no message type
  kOversized,      // body or payload over its limit
  kBadJson,        // the body is not valid JSON, or not an object
  kMissingField,   // the body lacks a field the type requires, or has a field of the wrong type
};

std::string_view to_string(DecodeError error);

struct DecodeResult {
  bool ok = false;
  // The frames as read: when ok, and with kMissingField (so that a client can be answered). A
  // handler reads only its body's request_id (a client's) and its payload here.
  Message message;
  // When ok: the body read by its type's struct, once, here; what the handlers take.
  AnyMessage body;
  DecodeError error{};  // when not ok
  std::string detail;   // when not ok: what was wrong, for logs
};

std::vector<std::string> encode(const Message& message);
DecodeResult decode(const std::vector<std::string>& frames);

}  // namespace kb::wire
