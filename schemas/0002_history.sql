-- kbfleet schema, migration 2: regression flags and the indexes behind history queries.
-- A series is (problem, GPU model, variant, preset); its points are results ordered by
-- COALESCE(commit_time, created_at), then id (a result without a commit sorts by when it arrived).

-- The series order, newest first, covering what `kb history` and the regression detector read
-- for each point, so one series' last N points are an index-only scan (measured: see
-- cli/history_reader.h). Replaces results_series from migration 1, which had no id tie-break.
CREATE INDEX results_series_history
  ON results (problem_id, gpu_model, preset, (COALESCE(commit_time, created_at)) DESC, id DESC)
  INCLUDE (status, device_kind, custom_median_ms, reference_median_ms);
DROP INDEX IF EXISTS results_series;

-- `kb compare` and `kb report --commits` find a commit's results by SHA or SHA prefix.
CREATE INDEX results_commit ON results (commit_sha text_pattern_ops);

-- One row per flagged point (result x variant). State moves flagged -> confirmed | cleared as later
-- points of the series arrive (common/regression_detector.h); confirmed -> cleared when it is fixed.
CREATE TABLE regressions (
  id              bigserial PRIMARY KEY,
  result_id       bigint NOT NULL REFERENCES results (id),
  problem_id      text NOT NULL,
  gpu_model       text NOT NULL,
  variant         text NOT NULL CHECK (variant IN ('custom', 'reference')),
  preset          text NOT NULL,
  commit_sha      text,
  median_ms       double precision NOT NULL,  -- the flagged point
  baseline_ms     double precision NOT NULL,  -- geometric mean of its history
  ratio           double precision NOT NULL,  -- median_ms / baseline_ms
  bound           double precision NOT NULL,  -- upper prediction bound (ms) at the corrected level
  slow_bound_ms   double precision NOT NULL,  -- later points above this keep the flag
  p_value         double precision NOT NULL,  -- one-sided, before correction
  adjusted_p      double precision NOT NULL,  -- after Bonferroni / BH over the batch
  history_points  integer NOT NULL,
  state           text NOT NULL DEFAULT 'flagged'
                  CHECK (state IN ('flagged', 'confirmed', 'cleared')),
  slow_points     integer NOT NULL DEFAULT 1,  -- slow points in a row, the flagged one included
  last_result_id  bigint NOT NULL,             -- the newest point that moved this flag
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (result_id, variant)
);
-- Open flags of a series (the detector looks them up for every new point) and for /metrics.
CREATE INDEX regressions_open ON regressions (problem_id, gpu_model, preset, variant)
  WHERE state IN ('flagged', 'confirmed');
CREATE INDEX regressions_created ON regressions (created_at);

GRANT SELECT ON regressions TO kb_readonly;
