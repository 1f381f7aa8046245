#include "worker/result_spool.h"
#include "common/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace kb {
namespace {

namespace fs = std::filesystem;

Status errno_status(const std::string& what) {
  return Status::io_error(what + ": " + std::strerror(errno));
}

Status write_file(const fs::path& path, const std::string& text, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("cannot create " + path.string());
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = errno_status("cannot write " + path.string());
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    Status s = errno_status("cannot fsync " + path.string());
    ::close(fd);
    return s;
  }
  ::close(fd);
  return Status::ok();
}

// A rename or unlink is durable only once the directory itself is synced.
Status sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open " + dir.string());
  const int rc = ::fsync(fd);
  Status s = rc == 0 ? Status::ok() : errno_status("cannot fsync " + dir.string());
  ::close(fd);
  return s;
}

// "<job_id>-<attempt>.json" -> the two numbers; false for any other name.
bool parse_name(const std::string& name, int64_t* job_id, int64_t* attempt) {
  long long j = 0, a = 0;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "%lld-%lld.json%n", &j, &a, &consumed) != 2) return false;
  if (static_cast<size_t>(consumed) != name.size()) return false;
  *job_id = j;
  *attempt = a;
  return true;
}

}  // namespace

Result<ResultSpool> ResultSpool::open(const fs::path& dir, bool durable) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error("cannot create " + dir.string() + ": " + ec.message());
  return ResultSpool(dir, durable);
}

fs::path ResultSpool::path_of(int64_t job_id, int64_t attempt) const {
  return dir_ / (std::to_string(job_id) + "-" + std::to_string(attempt) + ".json");
}

Status ResultSpool::put(const wire::ResultMessage& result) {
  const fs::path final_path = path_of(result.token.job_id, result.token.attempt);
  fs::path temp = final_path;
  temp += ".tmp";
  Status written = write_file(temp, result.to_body().dump(), durable_);
  if (written.is_ok() && ::rename(temp.c_str(), final_path.c_str()) != 0)
    written = errno_status("cannot rename " + temp.string());
  if (!written.is_ok()) {
    // A partial temp file would hold space on a disk that is already full, one more per failed
    // job, and nothing ever reads it back.
    ::unlink(temp.c_str());
    return written;
  }
  return durable_ ? sync_dir(dir_) : Status::ok();
}

Status ResultSpool::remove(int64_t job_id, int64_t attempt) {
  if (::unlink(path_of(job_id, attempt).c_str()) != 0 && errno != ENOENT) {
    return errno_status("cannot remove " + path_of(job_id, attempt).string());
  }
  // No directory sync: a result that comes back after a crash is resent and deduplicated.
  return Status::ok();
}

void ResultSpool::set_aside(const fs::path& file, const std::string& why) {
  ++bad_files_;
  fs::path bad = file;
  bad += ".bad";
  std::error_code ec;
  fs::rename(file, bad, ec);
  std::fprintf(stderr, "kb-worker: result spool: %s is unreadable (%s); moved to %s\n",
               file.c_str(), why.c_str(), bad.c_str());
}

std::vector<ResultSpool::Entry> ResultSpool::list() {
  std::vector<Entry> entries;
  std::error_code ec;
  for (const fs::directory_entry& f : fs::directory_iterator(dir_, ec)) {
    const std::string name = f.path().filename().string();
    Entry e;
    if (!f.is_regular_file() || !parse_name(name, &e.job_id, &e.attempt)) continue;  // .tmp, .bad
    const Result<std::string> text = read_file(f.path().string());
    const nlohmann::json body = nlohmann::json::parse(text.is_ok() ? text.value() : std::string(),
                                                      nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      set_aside(f.path(), "not JSON");
      continue;
    }
    Result<wire::ResultMessage> result = wire::ResultMessage::from_body(body);
    if (!result.is_ok()) {
      set_aside(f.path(), "not a RESULT body: " + result.status().message());
      continue;
    }
    e.result = std::move(result).value();
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.job_id, a.attempt) < std::tie(b.job_id, b.attempt);
  });
  return entries;
}

}  // namespace kb
