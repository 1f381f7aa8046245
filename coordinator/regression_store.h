// Regression detection against the database (docs/design.md#regressions; schemas/0002_history.sql):
// the coordinator's database thread calls detect_regressions() after a batch that inserted
// results has committed, with the new results' ids.
//
// For each new result with status ok on a real device (device_kind not 'sim') and each variant
// (custom, reference), it loads the series' last `config.history_points` ok points before it
// (same problem, GPU model, preset; ordered by COALESCE(commit_time, created_at), id), then:
//   - a series with an open flag (flagged or confirmed) whose flagged point precedes the new one
//     moves that flag on (advance_flag): confirmed after `confirm_points` slow points in a row,
//     cleared when a point is back under the flag's slow bound;
//   - every other point (and points of series whose flag is already confirmed) is checked by
//     check_points() as one batch, so the correction counts every point checked in this call;
//     flagged points become `regressions` rows.
// Idempotent: calling it again with the same ids inserts no duplicate (UNIQUE (result_id,
// variant)) and advances no flag twice (a flag remembers the newest result that moved it).
// Everything happens in one transaction; `*flagged` (may be null) receives the new flags' count.
//
// Errors: kIoError when the connection is lost or the transaction conflicts (retry), kInternal
// for anything else; nothing is written then.
//
// Thread safety: uses `conn` only; call from the thread that owns it.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <string>
#include <vector>

#include "common/regression_detector.h"
#include "common/status.h"

namespace kb::coord {

Status detect_regressions(pqxx::connection& conn, const std::vector<int64_t>& result_ids,
                          const RegressionConfig& config, int* flagged);

// Regressions flagged or confirmed and not cleared (the /metrics gauge kb_regressions_open).
Result<int64_t> count_open_regressions(pqxx::connection& conn);

// "1.5,2,3.25" (an array_to_string(float8[], ',') column) -> {1.5, 2, 3.25}; stops at the first
// token that is not a number.
std::vector<double> parse_double_list(const std::string& csv);

}  // namespace kb::coord
