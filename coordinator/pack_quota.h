// Pack uploads per submitter (docs/security.md): a pack is code that every worker loads, and its
// bytes live in PostgreSQL, so each upload is bounded in size and each submitter key in how many
// uploads and bytes it may send per sliding hour. Admin keys are bound by the size limit only.
// The ledger is in memory: a coordinator restart forgets it (at worst one more hour's quota).
//
// Thread safety: none; owned by the event loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace kb::coord {

struct PackQuota {
  uint64_t max_pack_bytes = uint64_t{128} << 20;  // one upload (the wire's limit is 256 MiB)
  int uploads_per_hour = 30;
  uint64_t bytes_per_hour = uint64_t{1} << 30;
};

class PackQuotaLedger {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PackQuotaLedger(PackQuota quota = {}) : quota_(quota) {}
  void set_quota(PackQuota quota) { quota_ = quota; }

  // "" and the upload is counted, or why it is refused (nothing counted).
  std::string admit(const std::string& submitter, bool admin, uint64_t bytes, Clock::time_point now);

 private:
  struct Upload {
    Clock::time_point at;
    uint64_t bytes;
  };
  PackQuota quota_;
  std::map<std::string, std::deque<Upload>> uploads_;  // per submitter, oldest first
};

}  // namespace kb::coord
