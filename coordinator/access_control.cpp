#include "coordinator/access_control.h"

#include <fstream>
#include <sstream>

#include "common/curve_keys.h"

namespace kb::coord {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// A name is also a worker name and goes into runs.submitted_by: printable, no ':' or spaces.
bool is_key_name(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    if (c <= ' ' || c > '~' || c == ':') return false;
  }
  return true;
}

Status load_one(const std::string& path, Role role, AllowLists& out) {
  std::ifstream in(path);
  if (!in) return Status::not_found(path + ": cannot open allow-list");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string key, name;
    fields >> key;
    std::getline(fields, name);
    name = trim(name);
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (!curve::is_z85_key(key)) return Status::invalid_argument(where + "expected a 40-character Z85 public key");
    if (!is_key_name(name)) {
      return Status::invalid_argument(where + "expected '<key> <name>' (a name without spaces or ':')");
    }
    if (auto it = out.find(key); it != out.end()) {
      return Status::invalid_argument(where + "key already listed as " + to_string(it->second.role) +
                                      " '" + it->second.name + "': one key, one role");
    }
    out[key] = AllowedKey{role, name};
  }
  return Status::ok();
}

}  // namespace

const char* to_string(Role role) {
  switch (role) {
    case Role::kWorker: return "worker";
    case Role::kSubmitter: return "submitter";
    case Role::kAdmin: return "admin";
  }
  return "?";
}

AllowListFiles allow_list_files_in(const std::string& dir) {
  AllowListFiles files;
  auto if_present = [&](const char* name) {
    const std::string path = dir + "/" + name;
    return std::ifstream(path) ? path : std::string();
  };
  files.workers = if_present("workers.txt");
  files.submitters = if_present("submitters.txt");
  files.admins = if_present("admins.txt");
  return files;
}

Result<AllowLists> load_allow_lists(const AllowListFiles& files) {
  AllowLists lists;
  if (!files.workers.empty()) KB_TRY(load_one(files.workers, Role::kWorker, lists));
  if (!files.submitters.empty()) KB_TRY(load_one(files.submitters, Role::kSubmitter, lists));
  if (!files.admins.empty()) KB_TRY(load_one(files.admins, Role::kAdmin, lists));
  return lists;
}

std::string user_id_of(const AllowedKey& key) { return std::string(to_string(key.role)) + ":" + key.name; }

std::optional<Peer> peer_from_user_id(const std::string& user_id) {
  if (user_id.empty()) return Peer{Role::kAdmin, "local", false};
  const size_t colon = user_id.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string role = user_id.substr(0, colon), name = user_id.substr(colon + 1);
  if (name.empty()) return std::nullopt;
  for (Role r : {Role::kWorker, Role::kSubmitter, Role::kAdmin}) {
    if (role == to_string(r)) return Peer{r, name, true};
  }
  return std::nullopt;
}

std::string refused_job_option(const Peer& peer, const wire::SubmitMessage& submit) {
  if (peer.role == Role::kAdmin) return "";
  if (submit.max_attempts && *submit.max_attempts > kMaxSubmitterAttempts) {
    return "max_attempts above " + std::to_string(kMaxSubmitterAttempts) + " needs an admin key";
  }
  if (submit.job_timeout_s && *submit.job_timeout_s > kMaxSubmitterJobTimeoutS) {
    return "job_timeout_s above " + std::to_string(static_cast<int>(kMaxSubmitterJobTimeoutS)) +
           " s needs an admin key";
  }
  if (submit.time_cap_s > kMaxSubmitterTimeCapS) {
    return "time_cap_s above " + std::to_string(static_cast<int>(kMaxSubmitterTimeCapS)) +
           " s needs an admin key";
  }
  return "";
}

bool may_cancel(const Peer& peer, const std::string& owner) {
  return peer.role == Role::kAdmin || (peer.role == Role::kSubmitter && peer.name == owner);
}

}  // namespace kb::coord
