// Pack uploads per submitter (coordinator/pack_quota.h): a size limit for everyone, a sliding
// hour of uploads and bytes per submitter key, none for admins.
#include "coordinator/pack_quota.h"

#include <gtest/gtest.h>

namespace kb::coord {
namespace {

using std::chrono::minutes;

TEST(PackQuota, RefusesOversizedPacksEvenFromAdmins) {
  PackQuotaLedger ledger({/*max_pack_bytes=*/100, /*uploads_per_hour=*/10, /*bytes_per_hour=*/1000});
  const auto now = PackQuotaLedger::Clock::now();
  EXPECT_NE(ledger.admit("alice", false, 101, now), "");
  EXPECT_NE(ledger.admit("root", true, 101, now), "");
  EXPECT_EQ(ledger.admit("alice", false, 100, now), "");
}

TEST(PackQuota, CountsUploadsAndBytesPerSubmitterOverASlidingHour) {
  PackQuotaLedger ledger({100, 2, 150});
  const auto t0 = PackQuotaLedger::Clock::now();
  EXPECT_EQ(ledger.admit("alice", false, 60, t0), "");
  EXPECT_NE(ledger.admit("alice", false, 100, t0), "");  // 160 bytes > 150
  EXPECT_EQ(ledger.admit("alice", false, 50, t0 + minutes(1)), "");
  EXPECT_NE(ledger.admit("alice", false, 1, t0 + minutes(2)).find("2 uploads per hour"), std::string::npos);
  EXPECT_EQ(ledger.admit("bob", false, 90, t0 + minutes(2)), "");  // per submitter
  EXPECT_EQ(ledger.admit("root", true, 100, t0 + minutes(2)), "");  // admins: size only
  EXPECT_EQ(ledger.admit("alice", false, 1, t0 + minutes(61)), "");  // the first one aged out
}

}  // namespace
}  // namespace kb::coord
