#include "common/log.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>

namespace kb::logging {
namespace {

std::string capture(Format format, const std::string& message) {
  KB_EXPECT_OK(init("kb-test", format));
  testing::internal::CaptureStderr();
  KB_LOG_INFO("{}", message);
  return testing::internal::GetCapturedStderr();
}

TEST(Log, TextLinesCarryTimestampLevelAndComponent) {
  const std::string line = capture(Format::kText, "hello");
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info kb-test: hello\n)")))
      << line;
}

TEST(Log, JsonLinesAreOneObjectEachWithEscapedMessage) {
  const std::string line = capture(Format::kJson, "a \"quoted\"\nsecond\\line");
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "the newline in the message must be escaped";
  const nlohmann::json object = nlohmann::json::parse(line);
  EXPECT_EQ(object["msg"], "a \"quoted\"\nsecond\\line");
  EXPECT_EQ(object["level"], "info");
  EXPECT_EQ(object["component"], "kb-test");
  EXPECT_TRUE(std::regex_match(object["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(Log, JobLinesNameTheJobAndAttempt) {
  KB_ASSERT_OK(init("kb-test", Format::kText));
  testing::internal::CaptureStderr();
  KB_LOG_JOB(spdlog::level::info, 12, 3, "{} started", "L1_003");
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("kb-test: job=12 attempt=3 L1_003 started"), std::string::npos) << line;
}

TEST(Log, PrintfStyleCallSitesKeepTheirFormat) {
  KB_ASSERT_OK(init("kb-test", Format::kText));
  testing::internal::CaptureStderr();
  KB_LOGF_WARN("%zu open jobs, %lld ms, %s", size_t{4}, 12LL, "x");
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("warning kb-test: 4 open jobs, 12 ms, x"), std::string::npos) << line;
}

TEST(Log, UnknownFormatAndLevelAreRejected) {
  EXPECT_FALSE(parse_format("xml").is_ok());
  EXPECT_FALSE(init("kb-test", Format::kText, "loud").is_ok());
}

}  // namespace
}  // namespace kb::logging
