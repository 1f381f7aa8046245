#include "common/json_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/assert_ok.h"

namespace kb::json_fields {
namespace {

using nlohmann::json;

const json kBody = {{"id", 12},
                    {"big", std::numeric_limits<uint64_t>::max()},
                    {"negative", -3},
                    {"ratio", 2.5},
                    {"name", "L2_017"},
                    {"flag", true},
                    {"models", {"H200", "A100"}},
                    {"samples", {1.5, 2}},
                    {"nested", {{"a", 1}}},
                    {"nothing", nullptr}};

TEST(JsonFields, RequiredReadsEachTypeItHolds) {
  KB_ASSERT_OK(required<int64_t>(kBody, "id"));
  EXPECT_EQ(required<int64_t>(kBody, "id").value(), 12);
  EXPECT_EQ(required<int>(kBody, "negative").value(), -3);
  EXPECT_EQ(required<uint64_t>(kBody, "big").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(required<double>(kBody, "ratio").value(), 2.5);
  EXPECT_EQ(required<double>(kBody, "id").value(), 12.0);  // an integer is a number
  EXPECT_EQ(required<std::string>(kBody, "name").value(), "L2_017");
  EXPECT_TRUE(required<bool>(kBody, "flag").value());
  EXPECT_EQ(required<std::vector<std::string>>(kBody, "models").value(),
            (std::vector<std::string>{"H200", "A100"}));
  EXPECT_EQ(required<std::vector<double>>(kBody, "samples").value(),
            (std::vector<double>{1.5, 2.0}));
  EXPECT_EQ(required<Object>(kBody, "nested").value(), (json{{"a", 1}}));
  EXPECT_EQ(required<json>(kBody, "models").value(), kBody["models"]);
}

TEST(JsonFields, AMissingOrNullRequiredFieldIsAnErrorNamingFieldAndType) {
  for (const char* name : {"absent", "nothing"}) {
    Result<int> r = required<int>(kBody, name);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "field '" + std::string(name) + "': missing (expected an integer (int))");
  }
}

TEST(JsonFields, AWrongTypeIsAnErrorNamingFieldExpectedAndGotten) {
  Result<int64_t> r = required<int64_t>(kBody, "name");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "field 'name': expected an integer (int64), got a string");
  EXPECT_EQ(required<std::string>(kBody, "id").status().message(),
            "field 'id': expected a string, got an integer");
  EXPECT_EQ(required<Object>(kBody, "models").status().message(),
            "field 'models': expected an object, got a list");
}

TEST(JsonFields, IntegersMustBeWholeAndInRange) {
  EXPECT_FALSE(required<int64_t>(kBody, "ratio").is_ok());  // 2.5 is not an integer
  EXPECT_FALSE(required<uint64_t>(kBody, "negative").is_ok());
  EXPECT_FALSE(required<int64_t>(kBody, "big").is_ok());  // above int64's range
  EXPECT_FALSE(required<int>(json{{"n", int64_t{1} << 40}}, "n").is_ok());
  EXPECT_FALSE(required<bool>(json{{"n", 1}}, "n").is_ok());
}

TEST(JsonFields, ListsMustHoldOnlyTheirElementType) {
  EXPECT_FALSE(required<std::vector<std::string>>(json{{"l", {"a", 1}}}, "l").is_ok());
  EXPECT_EQ(required<std::vector<double>>(json{{"l", {1, "x"}}}, "l").status().message(),
            "field 'l': expected a list of numbers, got a list");
}

TEST(JsonFields, OptionalGivesTheFallbackOnlyWhenAbsentOrNull) {
  EXPECT_EQ(optional<int>(kBody, "absent", 7).value(), 7);
  EXPECT_EQ(optional<int>(kBody, "nothing", 7).value(), 7);
  EXPECT_EQ(optional<int>(kBody, "id", 7).value(), 12);
  Result<std::string> wrong = optional<std::string>(kBody, "id", "x");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().message(), "field 'id': expected a string, got an integer");
}

TEST(JsonFields, ValueOrFallsBackOnAnythingItCannotRead) {
  EXPECT_EQ(value_or<std::string>(kBody, "id", "fallback"), "fallback");
  EXPECT_EQ(value_or<std::string>(kBody, "absent", "fallback"), "fallback");
  EXPECT_EQ(value_or<std::string>(kBody, "name", "fallback"), "L2_017");
  EXPECT_EQ(value_or<Object>(kBody, "models", json::object()), json::object());
}

TEST(JsonFields, ANonObjectHasNoFields) {
  EXPECT_EQ(required<int>(json::array({1}), "id").status().message(),
            "field 'id': missing (expected an integer (int))");
  EXPECT_EQ(value_or<int>(json("text"), "id", 4), 4);
  EXPECT_EQ(optional<int>(json(), "id", 5).value(), 5);
}

// Nesting is counted outside strings (brackets in strings and escaped quotes do not count).
TEST(JsonFields, NestingDepthCountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(nesting_depth("1"), 0);
  EXPECT_EQ(nesting_depth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(nesting_depth(R"({"a": "[[[{{{", "b": "\"[[[", "c": [1]})"), 2);
  EXPECT_EQ(nesting_depth(std::string(1000, '['), 10), 11);  // stops past the limit
}

// A peer's text nested past kMaxDepth is refused before nlohmann parses it: 300,000 levels (a
// 600 KB body, under the protocol's 1 MiB) crashed the coordinator when its decode copied them.
TEST(JsonFields, ParseUntrustedRefusesDeepNestingAndParsesTheRest) {
  const std::string deep =
      R"({"result": )" + std::string(300000, '[') + std::string(300000, ']') + "}";
  EXPECT_TRUE(parse_untrusted(deep).is_discarded());
  const std::string at_limit = std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']');
  EXPECT_FALSE(parse_untrusted(at_limit).is_discarded());
  EXPECT_TRUE(parse_untrusted("[" + at_limit + "]").is_discarded());
  EXPECT_EQ(parse_untrusted(R"({"id": 12})"), (json{{"id", 12}}));
  EXPECT_TRUE(parse_untrusted("{\"id\": 12,").is_discarded());
}

// PostgreSQL's text and jsonb hold no NUL: a peer's \u0000 comes back as U+FFFD, in values and
// keys at any depth; an escaped backslash before "u0000" is no NUL.
TEST(JsonFields, ParseUntrustedReplacesNulCharacters) {
  const std::string replacement = "\xEF\xBF\xBD";
  const json parsed = parse_untrusted(
      R"({"software": {"cu\u0000da": ["12\u0000\u0000", 3]}, "path": "C:\\u0000"})");
  ASSERT_FALSE(parsed.is_discarded());
  const json& software = parsed.at("software");
  ASSERT_TRUE(software.contains("cu" + replacement + "da")) << software.dump();
  EXPECT_EQ(software.at("cu" + replacement + "da").at(0), "12" + replacement + replacement);
  EXPECT_EQ(parsed.at("path"), "C:\\u0000");
  EXPECT_EQ(parsed.dump().find('\0'), std::string::npos);
}

}  // namespace
}  // namespace kb::json_fields
