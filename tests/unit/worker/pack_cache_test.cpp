// The pack cache: bytes are kept only under the sha256 they hash to.
#include "worker/pack_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/sha256.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

class PackCacheTest : public ::testing::Test {
 protected:
  ::kb::test::TempDir root_{"kb-pack-cache-test"};
};

TEST_F(PackCacheTest, StoresVerifiedBytesUnderTheirHash) {
  PackCache cache(root_ / "packs");
  const std::string bytes =
      "\x7f"
      "ELF pretend shared library";
  const std::string hash = sha256_hex(bytes);
  EXPECT_FALSE(cache.path_of(hash));
  Result<std::string> path = cache.store(hash, bytes);
  KB_ASSERT_OK(path);
  EXPECT_EQ(path.value(), (root_ / "packs" / (hash + ".so")).string());
  ASSERT_TRUE(cache.path_of(hash));
  std::ifstream in(path.value(), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), bytes);
}

TEST_F(PackCacheTest, RejectsBytesThatDoNotMatchTheHash) {
  PackCache cache(root_ / "packs");
  const std::string hash = sha256_hex("the real pack");
  Result<std::string> path = cache.store(hash, "something else");
  ASSERT_FALSE(path.is_ok());
  EXPECT_NE(path.status().message().find("sha256"), std::string::npos);
  EXPECT_FALSE(cache.path_of(hash));
}

TEST_F(PackCacheTest, NamesThatAreNotHashesNeverBecomePaths) {
  PackCache cache(root_ / "packs");
  EXPECT_FALSE(PackCache::is_valid_hash("../../etc/passwd"));
  EXPECT_FALSE(PackCache::is_valid_hash(std::string(64, 'A')));  // upper case is not our spelling
  EXPECT_TRUE(PackCache::is_valid_hash(std::string(64, 'a')));
  EXPECT_FALSE(cache.path_of("../x"));
  EXPECT_FALSE(cache.store("../x", "bytes").is_ok());
}

// The cache is private: its directory 0700 and each pack 0600, whatever the umask.
TEST_F(PackCacheTest, DirectoryAndFilesArePrivate) {
  PackCache cache(root_ / "packs");
  const std::string bytes = "pack bytes";
  Result<std::string> path = cache.store(sha256_hex(bytes), bytes);
  KB_ASSERT_OK(path);
  EXPECT_EQ(fs::status(root_ / "packs").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(path.value()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // No temp file is left beside it.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "packs")) entries += entry.is_regular_file();
  EXPECT_EQ(entries, 1);
}

TEST_F(PackCacheTest, MakePrivateDirTightensAnExistingDirectory) {
  fs::create_directories(root_ / "state");
  fs::permissions(root_ / "state", fs::perms::all);
  KB_ASSERT_OK(make_private_dir(root_ / "state"));
  EXPECT_EQ(fs::status(root_ / "state").permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
}  // namespace kb
