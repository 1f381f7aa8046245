#include "cli/pack_file.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kb::cli {
namespace {

TEST(PackFile, HashesTheFileBytes) {
  const auto path = std::filesystem::temp_directory_path() / "kb_pack_file_test.so";
  std::ofstream(path, std::ios::binary) << "abc";
  auto pack = read_pack_file(path.string());
  KB_ASSERT_OK(pack);
  EXPECT_EQ(pack->bytes, "abc");
  // FIPS 180-2, appendix B.1.
  EXPECT_EQ(pack->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
}

TEST(PackFile, MissingFileIsNotFound) {
  auto pack = read_pack_file("/nonexistent/libkbpack.so");
  ASSERT_FALSE(pack.is_ok());
  EXPECT_EQ(pack.status().code(), StatusCode::kNotFound);
}

TEST(PackFile, EnvironmentNamesTheDefault) {
  setenv("KB_PACK_PATH", "/somewhere/libkbpack.so", 1);
  EXPECT_EQ(default_pack_path(), "/somewhere/libkbpack.so");
  unsetenv("KB_PACK_PATH");
}

}  // namespace
}  // namespace kb::cli
