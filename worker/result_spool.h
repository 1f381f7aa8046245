// The worker's unacknowledged results on disk: one file per result, `<job_id>-<attempt>.json`
// holding the RESULT message's body (common/protocol_messages.h), in a directory of the worker's
// state dir.
//
// A result is put() (temp file, fsync, rename, fsync of the directory) BEFORE its RESULT is sent,
// and removed when the coordinator ACKs it; after every WELCOME the worker lists the spool and
// resends everything in it. A kill -9 or a power cut at any moment therefore leaves either no file
// or a whole one, never a torn one (the coordinator dedupes whatever is sent twice).
//
// A file that cannot be read back as a RESULT body (truncated by a full disk, edited by hand) is
// renamed to `<name>.bad`, counted and logged; it never stops the worker.
//
// Errors: put/remove return an io_error Status (a full disk, a read-only directory); a failed put
// leaves no file behind.
// Thread safety: one thread (the worker's loop).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/protocol_messages.h"
#include "common/status.h"

namespace kb {

class ResultSpool {
 public:
  struct Entry {
    int64_t job_id = 0;  // from the file's name
    int64_t attempt = 0;
    wire::ResultMessage result;  // as it was put()
  };

  // Creates `dir` (and its parents) when missing. durable = false skips the fsyncs: only for the
  // sim device, whose benchmark measures the coordinator rather than the worker's disk.
  static Result<ResultSpool> open(const std::filesystem::path& dir, bool durable = true);

  // Named by result.token's job id and attempt.
  Status put(const wire::ResultMessage& result);
  // Removing a result that is not there is fine (a duplicate ACK).
  Status remove(int64_t job_id, int64_t attempt);
  // Every whole result, oldest job id first; corrupt files are moved aside (see above).
  std::vector<Entry> list();

  const std::filesystem::path& dir() const { return dir_; }
  int bad_files() const { return bad_files_; }

 private:
  ResultSpool(std::filesystem::path dir, bool durable) : dir_(std::move(dir)), durable_(durable) {}
  std::filesystem::path path_of(int64_t job_id, int64_t attempt) const;
  void set_aside(const std::filesystem::path& file, const std::string& why);

  std::filesystem::path dir_;
  bool durable_ = true;
  int bad_files_ = 0;
};

}  // namespace kb
