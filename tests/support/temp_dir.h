// TempDir: a fresh, empty directory for one test, removed with everything in it when the TempDir
// is destroyed; keep() leaves it on disk, for a failing test whose files explain the failure. The
// name is <base>/<prefix>-XXXXXX (mkdtemp), so tests running in parallel (ctest -j), repeated
// runs and the tests of one fixture never share one.
//
//   kb::test::TempDir dir("kb-spool-test");       // usually a fixture member
//   std::ofstream(dir / "a.txt") << "...";
//
// Thread safety: one owner; what goes into the directory is the test's business.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace kb::test {

class TempDir {
 public:
  // Throws std::system_error, which gtest reports as the test's failure, when mkdtemp fails.
  explicit TempDir(const std::string& prefix,
                   const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
    std::string pattern = (base / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    if (keep_) return;
    std::error_code ignored;  // a destructor does not throw; a leftover directory is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string string() const { return path_.string(); }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }
  // Leaves the directory on disk when the TempDir goes.
  void keep() { keep_ = true; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

}  // namespace kb::test
