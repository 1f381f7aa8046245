#include "common/install_paths.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kb {
namespace {

namespace fs = std::filesystem;

// The folder of the running program; empty when /proc is unavailable.
fs::path program_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path();
}

// The first of `candidates` that is a regular file, or "".
std::string first_file(std::initializer_list<fs::path> candidates) {
  std::error_code ec;
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return "";
}

}  // namespace

std::string default_executor_path() {
  const fs::path dir = program_dir();
  if (dir.empty()) return "kb-executor";
  std::string found =
      first_file({dir / "kb-executor", dir.parent_path() / "executor" / "kb-executor"});
  return found.empty() ? "kb-executor" : found;
}

std::string default_reference_pack_path() {
  if (const char* env = std::getenv("KB_REFERENCE_PACK"); env != nullptr && *env != '\0')
    return env;
  const fs::path dir = program_dir();
  if (dir.empty()) return "";
  return first_file({dir / "libkbref.so", dir.parent_path() / "kernels" / "libkbref.so",
                     dir.parent_path() / "lib" / "libkbref.so"});
}

Result<std::string> read_pack_pin(const std::string& pack_path) {
  const std::string pin_path = pack_path + ".sha256";
  std::ifstream in(pin_path);
  std::string pin;
  if (!(in >> pin)) return Status::not_found("the reference pack has no pin (" + pin_path + ")");
  if (pin.size() != 64 || pin.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::invalid_argument(pin_path + " holds no sha256");
  }
  return pin;
}

}  // namespace kb
