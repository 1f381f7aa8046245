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
// and drops the message; it never crashes on network input).
//
// Thread safety: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

enum class MessageType {
  // worker -> coordinator
  kReady,        // registration: GPU identity and software versions
  kHeartbeat,    // both directions
  kRequest,      // credits: how many more jobs the worker will take
  kResult,       // a job's result (kept on the worker's disk until ACK)
  kPackRequest,  // the worker lacks a pack: asks for it by hash
  kBye,          // draining (gives back unstarted jobs) or leaving now (final)
  // coordinator -> worker
  kWelcome,      // registration accepted: heartbeat interval, worker id
  kJob,          // one job to run
  kAck,          // the result's row is committed: the worker may delete it
  kPack,         // pack bytes in the payload frame
  kDisconnect,   // the coordinator is draining or refuses the worker
  kRevoke,       // a lease ended (deadline, cancel, drain, not the holder): stop the job
  // client <-> coordinator
  kSubmit,
  kQuery,
  kCancel,
  kWorkerControl,  // admin: drain, resume or release (from quarantine) a worker by name
  kReply,
  kError,
};

std::string_view to_string(MessageType type);

struct Message {
  MessageType type = MessageType::kHeartbeat;
  nlohmann::json body = nlohmann::json::object();
  std::string payload;  // empty when the message has no payload frame
};

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
  Message message;             // when ok; with kMissingField, the type and body that were read
  DecodeError error{};         // when not ok
  std::string detail;          // when not ok: what was wrong, for logs
};

std::vector<std::string> encode(const Message& message);
DecodeResult decode(const std::vector<std::string>& frames);

}  // namespace kb::wire
