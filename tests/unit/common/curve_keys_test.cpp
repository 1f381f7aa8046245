// Key files (common/curve_keys.h): the secret is never in a file that someone else could have
// opened first. write_key_file creates with O_EXCL and mode 0600; it refuses an existing file or
// a planted symlink, and `replace` makes a new inode, so a descriptor opened on the old file
// before the write never sees the secret.
#include "common/curve_keys.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kb::curve {
namespace {

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    keys_ = generate_key_pair().value();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  ::kb::test::TempDir dir_{"kb-keys-test"};
  KeyPair keys_;
};

TEST_F(KeyFileTest, IsCreatedWithMode0600WhateverTheUmask) {
  const mode_t old = ::umask(0);
  const Status s = write_key_file(path("k.key"), keys_);
  ::umask(old);
  KB_ASSERT_OK(s);
  struct stat st {};
  ASSERT_EQ(::stat(path("k.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(load_key_file(path("k.key"), true).value().secret_key, keys_.secret_key);
}

TEST_F(KeyFileTest, RefusesAFileSomeoneCreatedFirstAndWritesNoSecretIntoIt) {
  std::ofstream(path("k.key")) << "";
  ::chmod(path("k.key").c_str(), 0666);
  const Status s = write_key_file(path("k.key"), keys_);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("exists"), std::string::npos) << s.message();
  EXPECT_EQ(std::filesystem::file_size(path("k.key")), 0u);
}

TEST_F(KeyFileTest, RefusesAPlantedSymlinkAndLeavesItsTargetAlone) {
  std::ofstream(path("target")) << "";
  std::filesystem::create_symlink(path("target"), path("k.key"));
  EXPECT_FALSE(write_key_file(path("k.key"), keys_).is_ok());
  EXPECT_EQ(std::filesystem::file_size(path("target")), 0u);
}

TEST_F(KeyFileTest, ReplaceMakesANewFileThatAnOldDescriptorCannotRead) {
  std::ofstream(path("k.key")) << "";
  const int early = ::open(path("k.key").c_str(), O_RDONLY);  // opened before the secret exists
  ASSERT_GE(early, 0);
  KB_ASSERT_OK(write_key_file(path("k.key"), keys_, /*replace=*/true));
  char buffer[16];
  EXPECT_EQ(::read(early, buffer, sizeof buffer), 0);  // the old inode stays empty
  ::close(early);
  struct stat st {};
  ASSERT_EQ(::stat(path("k.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace kb::curve
