#include "common/wire_protocol.h"

#include "common/protocol_messages.h"

#include <array>
#include <cstdio>
#include <utility>

namespace kb::wire {
namespace {

struct TypeInfo {
  MessageType type;
  std::string_view name;
  bool needs_payload = false;
};

// The body of each type is checked by its struct's from_body (protocol_messages.h).
const std::vector<TypeInfo>& types() {
  static const std::vector<TypeInfo> kTypes = {
      {MessageType::kReady, "READY"},
      {MessageType::kHeartbeat, "HEARTBEAT"},
      {MessageType::kRequest, "REQUEST"},
      {MessageType::kResult, "RESULT"},
      {MessageType::kPackRequest, "PACK_REQUEST"},
      {MessageType::kBye, "BYE"},
      {MessageType::kWelcome, "WELCOME"},
      {MessageType::kJob, "JOB"},
      {MessageType::kAck, "ACK"},
      {MessageType::kPack, "PACK", /*needs_payload=*/true},
      {MessageType::kDisconnect, "DISCONNECT"},
      {MessageType::kRevoke, "REVOKE"},
      {MessageType::kSubmit, "SUBMIT"},
      {MessageType::kQuery, "QUERY"},
      {MessageType::kCancel, "CANCEL"},
      {MessageType::kWorkerControl, "WORKER_CONTROL"},
      {MessageType::kReply, "REPLY"},
      {MessageType::kError, "ERROR"},
  };
  return kTypes;
}

const TypeInfo* find_type(std::string_view name) {
  for (const TypeInfo& t : types()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TypeInfo& info_of(MessageType type) {
  for (const TypeInfo& t : types()) {
    if (t.type == type) return t;
  }
  return types().front();  // unreachable: every enumerator has a row
}

DecodeResult reject(DecodeError error, std::string detail) {
  DecodeResult r;
  r.error = error;
  r.detail = std::move(detail);
  return r;
}

}  // namespace

bool software_compatible(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v, int* major, int* minor) {
    return std::sscanf(v.c_str(), "%d.%d", major, minor) == 2;
  };
  int a_major = 0, a_minor = 0, b_major = 0, b_minor = 0;
  if (!parts(a, &a_major, &a_minor) || !parts(b, &b_major, &b_minor)) return false;
  return a_major == b_major && (a_major != 0 || a_minor == b_minor);
}

std::string_view to_string(MessageType type) { return info_of(type).name; }

std::string_view to_string(DecodeError error) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "bad_frame_count", "bad_tag", "unknown_type", "oversized", "bad_json", "missing_field"};
  return kNames[static_cast<size_t>(error)];
}

std::vector<std::string> encode(const Message& message) {
  std::vector<std::string> frames = {std::string(kProtocolTag), std::string(to_string(message.type)),
                                     // A null body (`{}` in a brace initializer) is the empty object.
                                     message.body.is_null() ? std::string("{}") : message.body.dump()};
  if (!message.payload.empty()) frames.push_back(message.payload);
  return frames;
}

DecodeResult decode(const std::vector<std::string>& frames) {
  if (frames.size() < 3 || frames.size() > 4) {
    return reject(DecodeError::kBadFrameCount, "expected 3 or 4 frames, got " + std::to_string(frames.size()));
  }
  if (frames[0] != kProtocolTag) {
    return reject(DecodeError::kBadTag, "expected protocol tag KBF1, got a " +
                                            std::to_string(frames[0].size()) + "-byte frame");
  }
  const TypeInfo* type = find_type(frames[1]);
  if (!type) return reject(DecodeError::kUnknownType, "unknown message type (" + std::to_string(frames[1].size()) + " bytes)");
  if (frames[2].size() > kMaxBodyBytes) {
    return reject(DecodeError::kOversized, "body of " + std::to_string(frames[2].size()) + " bytes");
  }
  if (frames.size() == 4 && frames[3].size() > kMaxPayloadBytes) {
    return reject(DecodeError::kOversized, "payload of " + std::to_string(frames[3].size()) + " bytes");
  }
  nlohmann::json body = nlohmann::json::parse(frames[2], nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return reject(DecodeError::kBadJson, std::string(type->name) + ": the body is not a JSON object");
  }
  if (Status s = check_body(type->type, body); !s.is_ok()) {
    DecodeResult r =
        reject(DecodeError::kMissingField, std::string(type->name) + ": " + s.message());
    r.message.type = type->type;  // so that a client's request can still be answered
    r.message.body = std::move(body);
    return r;
  }
  // A PACK answering for a pack the coordinator does not have says {"missing": true} instead.
  const bool says_missing = body.contains("missing") && body["missing"] == true;
  if (type->needs_payload && !says_missing && (frames.size() != 4 || frames[3].empty())) {
    return reject(DecodeError::kMissingField, std::string(type->name) + ": the payload frame is missing");
  }
  DecodeResult r;
  r.ok = true;
  r.message.type = type->type;
  r.message.body = std::move(body);
  if (frames.size() == 4) r.message.payload = frames[3];
  return r;
}

}  // namespace kb::wire
