#include "common/wire_protocol.h"

#include <array>
#include <cstdio>
#include <optional>
#include <utility>

#include "common/json_fields.h"

namespace kb::wire {
namespace {

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
  const std::optional<MessageType> type = message_type_named(frames[1]);
  if (!type) return reject(DecodeError::kUnknownType, "unknown message type (" + std::to_string(frames[1].size()) + " bytes)");
  const std::string name(to_string(*type));
  if (frames[2].size() > kMaxBodyBytes) {
    return reject(DecodeError::kOversized, "body of " + std::to_string(frames[2].size()) + " bytes");
  }
  if (frames.size() == 4 && frames[3].size() > kMaxPayloadBytes) {
    return reject(DecodeError::kOversized, "payload of " + std::to_string(frames[3].size()) + " bytes");
  }
  nlohmann::json body = json_fields::parse_untrusted(frames[2]);
  if (body.is_discarded() || !body.is_object()) {
    return reject(DecodeError::kBadJson, name + ": the body is not a JSON object nested at most " +
                                             std::to_string(json_fields::kMaxDepth) + " deep");
  }
  Result<AnyMessage> typed = read_body(*type, body);
  if (!typed.is_ok()) {
    DecodeResult r = reject(DecodeError::kMissingField, name + ": " + typed.status().message());
    r.message.type = *type;  // so that a client's request can still be answered
    r.message.body = std::move(body);
    return r;
  }
  // PACK carries the pack's bytes, unless it says {"missing": true}: the coordinator lacks them.
  const auto* pack = std::get_if<PackMessage>(&typed.value());
  if (pack && !pack->missing && (frames.size() != 4 || frames[3].empty())) {
    return reject(DecodeError::kMissingField, name + ": the payload frame is missing");
  }
  DecodeResult r;
  r.ok = true;
  r.message.type = *type;
  r.message.body = std::move(body);
  r.body = std::move(typed).value();
  if (frames.size() == 4) r.message.payload = frames[3];
  return r;
}

}  // namespace kb::wire
