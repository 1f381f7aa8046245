// read_text(path): a file's text, or "" when it cannot be read (a log not written yet): for
// tests that poll or print files. Production code uses kb::read_file (common/files.h).
#pragma once

#include <filesystem>
#include <string>

#include "common/files.h"

namespace kb::test {

inline std::string read_text(const std::filesystem::path& path) {
  Result<std::string> text = read_file(path);
  return text.is_ok() ? std::move(text).value() : std::string();
}

}  // namespace kb::test
