#include "cli/cli_config.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kb::cli {
namespace {

namespace fs = std::filesystem;

class CliConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "home" / ".config" / "kbfleet");
    env_["HOME"] = (dir_ / "home").string();
  }

  EnvLookup env() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      const auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
  }
  std::string write(const std::string& relative, const std::string& text) {
    const fs::path path = dir_ / relative;
    std::ofstream(path) << text;
    return path.string();
  }

  ::kb::test::TempDir dir_{"kb-cli-config-test"};
  std::map<std::string, std::string> env_;
};

TEST_F(CliConfigTest, FlagsBeatEnvironmentBeatsTheDefaultConfigFile) {
  write("home/.config/kbfleet/config.yaml",
        "coordinator: tcp://file:1\ndb: postgresql://file/db\n");
  env_["KB_DB_URL"] = "postgresql://env/db";
  ConfigFlags flags;
  auto from_file = resolve_config(flags, env());
  KB_ASSERT_OK(from_file);
  EXPECT_EQ(from_file->coordinator, "tcp://file:1");  // only the file sets it
  EXPECT_EQ(from_file->db, "postgresql://env/db");    // env over file
  EXPECT_EQ(from_file->config_file, (dir_ / "home/.config/kbfleet/config.yaml").string());

  env_["KB_COORDINATOR"] = "tcp://env:2";
  flags.db = "postgresql://flag/db";
  auto mixed = resolve_config(flags, env());
  KB_ASSERT_OK(mixed);
  EXPECT_EQ(mixed->coordinator, "tcp://env:2");
  EXPECT_EQ(mixed->db, "postgresql://flag/db");  // flag over env
}

TEST_F(CliConfigTest, ExplicitConfigFileReplacesTheDefaultAndMustExist) {
  write("home/.config/kbfleet/config.yaml", "coordinator: tcp://default:1\n");
  ConfigFlags flags;
  flags.config_file = write("other.yaml", "coordinator: tcp://other:3\ncurve_key: a.key\ncoordinator_key: c.pub\n");
  auto config = resolve_config(flags, env());
  KB_ASSERT_OK(config);
  EXPECT_EQ(config->coordinator, "tcp://other:3");
  EXPECT_TRUE(config->use_curve());
  EXPECT_EQ(config->coordinator_key, "c.pub");

  flags.config_file = (dir_ / "missing.yaml").string();
  auto missing = resolve_config(flags, env());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("missing.yaml does not exist"), std::string::npos);
}

TEST_F(CliConfigTest, NoFileAtAllIsFine) {
  auto config = resolve_config({}, env());
  KB_ASSERT_OK(config);
  EXPECT_TRUE(config->config_file.empty());
  EXPECT_TRUE(config->coordinator.empty());
}

TEST_F(CliConfigTest, UnknownKeyIsAnErrorNamingTheKnownOnes) {
  ConfigFlags flags;
  flags.config_file = write("typo.yaml", "coordinater: tcp://x:1\n");
  auto config = resolve_config(flags, env());
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("unknown key 'coordinater'"), std::string::npos);
  EXPECT_NE(config.status().message().find("coordinator, db, curve_key, coordinator_key"), std::string::npos);

  flags.config_file = write("list.yaml", "- a\n- b\n");
  EXPECT_FALSE(resolve_config(flags, env()).is_ok());
}

TEST_F(CliConfigTest, OneKeyWithoutTheOtherIsAnError) {
  env_["KB_CURVE_KEY"] = "me.key";
  auto config = resolve_config({}, env());
  ASSERT_FALSE(config.is_ok());
  EXPECT_NE(config.status().message().find("CURVE needs both keys"), std::string::npos);
}

TEST_F(CliConfigTest, MissingEndpointsSayHowToSupplyThem) {
  FleetConfig config;
  const Status coordinator = require_coordinator(config);
  EXPECT_EQ(coordinator.message(),
            "no coordinator endpoint: pass --coordinator, set KB_COORDINATOR or add `coordinator:` to "
            "~/.config/kbfleet/config.yaml");
  const Status db = require_db(config);
  EXPECT_NE(db.message().find("pass --db, set KB_DB_URL"), std::string::npos);
  config.coordinator = "tcp://127.0.0.1:5555";
  KB_EXPECT_OK(require_coordinator(config));
}

TEST_F(CliConfigTest, XdgConfigHomeIsHonoured) {
  env_["XDG_CONFIG_HOME"] = (dir_ / "xdg").string();
  EXPECT_EQ(default_config_path(env()), (dir_ / "xdg" / "kbfleet" / "config.yaml").string());
}

}  // namespace
}  // namespace kb::cli
