#include "coordinator/pack_quota.h"

namespace kb::coord {

std::string PackQuotaLedger::admit(const std::string& submitter, bool admin, uint64_t bytes,
                                   Clock::time_point now) {
  if (bytes > quota_.max_pack_bytes) {
    return "the pack is " + std::to_string(bytes) + " bytes; the limit is " +
           std::to_string(quota_.max_pack_bytes);
  }
  if (admin) return "";
  std::deque<Upload>& mine = uploads_[submitter];
  while (!mine.empty() && now - mine.front().at >= std::chrono::hours(1)) mine.pop_front();
  uint64_t sent = 0;
  for (const Upload& u : mine) sent += u.bytes;
  if (static_cast<int>(mine.size()) >= quota_.uploads_per_hour) {
    return "pack upload quota: " + std::to_string(quota_.uploads_per_hour) +
           " uploads per hour for '" + submitter + "'";
  }
  if (sent + bytes > quota_.bytes_per_hour) {
    return "pack upload quota: " + std::to_string(quota_.bytes_per_hour) + " bytes per hour for '" +
           submitter + "' (" + std::to_string(sent) + " used)";
  }
  mine.push_back({now, bytes});
  return "";
}

}  // namespace kb::coord
