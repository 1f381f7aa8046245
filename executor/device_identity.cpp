#include "executor/device_identity.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace kb {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown cpu";
}

std::string machine_id() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

nlohmann::json describe_cpu_device() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  const int64_t memory = pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
  return {{"kind", "cpu"},
          {"model", "cpu"},
          {"cpu", cpu_model_name()},
          {"uuid", machine_id()},
          {"memory_bytes", memory},
          {"compute_capability", ""},
          {"cores", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN))},
          {"software", nlohmann::json::object()}};
}

}  // namespace kb
