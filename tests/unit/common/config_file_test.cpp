#include "common/config_file.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kb {
namespace {

namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             ("kb_config_file_" + std::string(::testing::UnitTest::GetInstance()
                                                  ->current_test_info()
                                                  ->name()) +
              ".yaml"))
                .string();
    schema_.text("db", &db_, "KB_DB_URL")
        .integer("liveness", &liveness_, 2, 100)
        .choice("log_format", &format_, {"text", "json"}, "KB_LOG_FORMAT")
        .boolean("sim_fsync", &fsync_);
  }
  void TearDown() override { fs::remove(path_); }

  void write(const std::string& text) { std::ofstream(path_) << text; }
  Status apply(const std::set<std::string>& given = {}, bool is_explicit = false) {
    return schema_.apply(path_, is_explicit, given, [this](const std::string& name) {
      auto it = env_.find(name);
      return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
  }

  std::string path_;
  ConfigSchema schema_;
  std::string db_ = "default-db", format_ = "text";
  int liveness_ = 3;
  bool fsync_ = false;
  std::map<std::string, std::string> env_;
};

TEST_F(ConfigFileTest, FileValuesFillKeysNotGivenAsFlags) {
  write("db: postgresql://kb@db/kbfleet\nliveness: 7\nlog_format: json\nsim_fsync: true\n");
  KB_ASSERT_OK(apply());
  EXPECT_EQ(db_, "postgresql://kb@db/kbfleet");
  EXPECT_EQ(liveness_, 7);
  EXPECT_EQ(format_, "json");
  EXPECT_TRUE(fsync_);
}

TEST_F(ConfigFileTest, FlagBeatsEnvironmentWhichBeatsFile) {
  write("db: from-file\nlog_format: text\n");
  env_["KB_DB_URL"] = "from-env";
  env_["KB_LOG_FORMAT"] = "json";
  db_ = "from-flag";
  KB_ASSERT_OK(apply({"db"}));
  EXPECT_EQ(db_, "from-flag");  // the flag's value stays
  EXPECT_EQ(format_, "json");   // the environment beats the file
}

TEST_F(ConfigFileTest, MissingDefaultFileLeavesDefaults) {
  KB_ASSERT_OK(apply());
  EXPECT_EQ(db_, "default-db");
  EXPECT_EQ(liveness_, 3);
}

TEST_F(ConfigFileTest, MissingExplicitFileIsAnError) {
  const Status s = apply({}, /*is_explicit=*/true);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(path_), std::string::npos);
}

TEST_F(ConfigFileTest, UnknownKeyNamesFileKeyAndKnownKeys) {
  write("liveliness: 4\n");
  const Status s = apply();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("unknown key 'liveliness'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("liveness"), std::string::npos) << s.message();
}

TEST_F(ConfigFileTest, BadValueNamesFileKeyAndWhatWasExpected) {
  write("liveness: 1000\n");
  Status s = apply();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(path_ + ": key 'liveness': expected an integer in [2, 100], got '1000'"),
            std::string::npos)
      << s.message();
  write("log_format: xml\n");
  s = apply();
  EXPECT_NE(s.message().find("expected one of text, json"), std::string::npos) << s.message();
  write("sim_fsync: maybe\n");
  s = apply();
  EXPECT_NE(s.message().find("expected true or false"), std::string::npos) << s.message();
}

TEST_F(ConfigFileTest, BadEnvironmentValueNamesTheVariable) {
  env_["KB_LOG_FORMAT"] = "xml";
  const Status s = apply();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("environment KB_LOG_FORMAT: expected one of text, json"),
            std::string::npos)
      << s.message();
}

TEST_F(ConfigFileTest, NestedValueIsRejected) {
  write("db:\n  host: x\n");
  const Status s = apply();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("key 'db': expected a single value"), std::string::npos) << s.message();
}

TEST_F(ConfigFileTest, NonMapFileIsRejected) {
  write("- a\n- b\n");
  EXPECT_FALSE(apply().is_ok());
}

TEST_F(ConfigFileTest, EmptyFileIsAccepted) {
  write("");
  KB_EXPECT_OK(apply());
}

}  // namespace
}  // namespace kb
