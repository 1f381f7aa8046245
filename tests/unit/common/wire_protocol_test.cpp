#include "common/wire_protocol.h"

#include <gtest/gtest.h>

#include <random>

namespace kb::wire {
namespace {

Message job_message() {
  Message m;
  m.type = MessageType::kJob;
  m.body = {{"job_id", 12}, {"attempt", 1}, {"problem", "L2_017"}, {"preset", "full"},
            {"seed", 42}, {"pack", "sha256:ab"}};
  return m;
}

TEST(WireProtocol, RoundTripsEveryFieldAndThePayload) {
  Message pack;
  pack.type = MessageType::kPack;
  pack.body = {{"pack", "sha256:cd"}};
  pack.payload = std::string("\x7f" "ELF\0\1\2", 7);
  for (const Message& m : {job_message(), pack}) {
    DecodeResult r = decode(encode(m));
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(r.message.type, m.type);
    EXPECT_EQ(r.message.body, m.body);
    EXPECT_EQ(r.message.payload, m.payload);
  }
}

TEST(WireProtocol, EncodesTagTypeAndBodyFrames) {
  std::vector<std::string> frames = encode(job_message());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], "KBF1");
  EXPECT_EQ(frames[1], "JOB");
  EXPECT_EQ(nlohmann::json::parse(frames[2])["problem"], "L2_017");
}

TEST(WireProtocol, RejectsEachKindOfBadMessage) {
  const std::vector<std::string> good = encode(job_message());
  struct Bad {
    std::vector<std::string> frames;
    DecodeError error;
  };
  std::vector<Bad> cases = {
      {{"KBF1", "JOB"}, DecodeError::kBadFrameCount},
      {{"KBF1", "JOB", "{}", "x", "y"}, DecodeError::kBadFrameCount},
      {{"KBF2", "JOB", good[2]}, DecodeError::kBadTag},
      {{"KBF1", "EXPLODE", good[2]}, DecodeError::kUnknownType},
      {{"KBF1", "JOB", "{\"job_id\": 1,"}, DecodeError::kBadJson},
      {{"KBF1", "JOB", "[1, 2]"}, DecodeError::kBadJson},
      // 200,000 levels in 400 KB: the coordinator died copying them (json_fields::parse_untrusted).
      {{"KBF1", "RESULT",
        R"({"job_id": 1, "attempt": 1, "result": {"x": )" + std::string(200000, '[') +
            std::string(200000, ']') + "}}"},
       DecodeError::kBadJson},
      {{"KBF1", "JOB", "{\"job_id\": 1}"}, DecodeError::kMissingField},
      {{"KBF1", "JOB",
        R"({"job_id": "12", "attempt": 1, "problem": "p", "preset": "full", "seed": 1, "pack": "h"})"},
       DecodeError::kMissingField},
      {{"KBF1", "PACK", R"({"pack": "h"})"}, DecodeError::kMissingField},
      {{"KBF1", "JOB", std::string(kMaxBodyBytes + 1, ' ')}, DecodeError::kOversized},
  };
  for (const Bad& b : cases) {
    DecodeResult r = decode(b.frames);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, b.error) << to_string(r.error) << ": " << r.detail;
    EXPECT_FALSE(r.detail.empty());
  }
}

// A bounded fuzz: random byte flips, truncations and frame shuffles of valid messages must be
// decoded or rejected, never crash, and anything accepted must re-encode to an accepted message.
TEST(WireProtocol, SurvivesRandomlyMutatedMessages) {
  std::mt19937 rng(20261130);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::string> frames = encode(job_message());
    switch (rng() % 4) {
      case 0: {  // flip bytes
        std::string& f = frames[rng() % frames.size()];
        if (!f.empty()) f[rng() % f.size()] = static_cast<char>(rng());
        break;
      }
      case 1: {  // truncate a frame
        std::string& f = frames[rng() % frames.size()];
        f.resize(rng() % (f.size() + 1));
        break;
      }
      case 2:  // drop or add frames
        if (rng() % 2) frames.pop_back(); else frames.push_back(std::string(rng() % 64, 'x'));
        break;
      default:
        std::shuffle(frames.begin(), frames.end(), rng);
    }
    DecodeResult r = decode(frames);
    if (r.ok) {
      ++accepted;
      ASSERT_TRUE(decode(encode(r.message)).ok);
    } else {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 10000);
  EXPECT_GT(accepted, 0);
}

TEST(WireProtocol, NamesRoundTrip) {
  EXPECT_EQ(to_string(MessageType::kPackRequest), "PACK_REQUEST");
  EXPECT_EQ(to_string(DecodeError::kOversized), "oversized");
}

}  // namespace
}  // namespace kb::wire
