-- kbfleet schema, migration 1: the durable queue and the results.
-- Applied by kb-coordinator at start (coordinator/migrations.cpp), inside one transaction, and
-- recorded in schema_migrations. Never edit a migration that has shipped: add the next number.

CREATE TABLE problems (
  id          text PRIMARY KEY,                -- "L2_010"
  name        text NOT NULL,
  level       integer NOT NULL,
  family      text NOT NULL,
  spec_yaml   text NOT NULL,
  spec_hash   text NOT NULL,                   -- sha256 of spec_yaml
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Kernel packs by content hash (sha256 of the .so). Served to workers that lack them.
CREATE TABLE packs (
  hash        text PRIMARY KEY,
  bytes       bytea NOT NULL,
  size_bytes  bigint NOT NULL,
  commit_sha  text,
  build_info  jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per worker name; a re-registration updates it.
CREATE TABLE workers (
  id                  bigserial PRIMARY KEY,
  name                text NOT NULL UNIQUE,
  device_kind         text NOT NULL CHECK (device_kind IN ('cuda', 'cpu', 'sim')),
  gpu_model           text NOT NULL,           -- "NVIDIA H200", "cpu", "sim"
  gpu_uuid            text,
  memory_bytes        bigint,
  compute_capability  text,
  software            jsonb NOT NULL DEFAULT '{}',  -- driver, cuda, cudnn, cublas, kbfleet
  host                text,
  state               text NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'busy', 'lost', 'gone')),
  first_seen          timestamptz NOT NULL DEFAULT now(),
  last_seen           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE runs (
  id            bigserial PRIMARY KEY,
  submitted_by  text NOT NULL,
  submitted_at  timestamptz NOT NULL DEFAULT now(),
  suite         text,                          -- suite name, when submitted as a suite
  problems      text[] NOT NULL,
  preset        text NOT NULL,
  gpu_models    text[] NOT NULL,               -- '{}' = any worker
  commit_sha    text,
  branch        text,
  commit_time   timestamptz,
  pack_hash     text REFERENCES packs (hash),
  config        jsonb NOT NULL DEFAULT '{}',   -- seed, time cap, labels
  state         text NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'running', 'done', 'cancelled')),
  finished_at   timestamptz
);
CREATE INDEX runs_commit ON runs (commit_sha);

-- The durable queue: queued -> leased -> done | failed | cancelled.
CREATE TABLE jobs (
  id                bigserial PRIMARY KEY,
  run_id            bigint NOT NULL REFERENCES runs (id),
  problem_id        text NOT NULL,
  preset            text NOT NULL,
  gpu_model         text,                      -- NULL = any worker
  seed              bigint NOT NULL,
  predicted_ms      double precision NOT NULL DEFAULT 0,  -- for longest-predicted-first
  params            jsonb NOT NULL DEFAULT '{}',          -- e.g. {"sleep_ms": 12} for sim jobs
  state             text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
  attempt           integer NOT NULL DEFAULT 0,  -- attempts started; at most max_attempts
  max_attempts      integer NOT NULL DEFAULT 3,
  worker_id         bigint REFERENCES workers (id),
  leased_at         timestamptz,
  lease_deadline    timestamptz,               -- the job deadline of the current attempt
  finished_at       timestamptz,
  failure_reason    text
);
CREATE INDEX jobs_run ON jobs (run_id);
CREATE INDEX jobs_open ON jobs (state) WHERE state IN ('queued', 'leased');

-- Exactly one result per job (unique job_id): a late result of an earlier attempt is a duplicate.
CREATE TABLE results (
  id                     bigserial PRIMARY KEY,
  job_id                 bigint NOT NULL UNIQUE REFERENCES jobs (id),
  run_id                 bigint NOT NULL REFERENCES runs (id),
  attempt                integer NOT NULL,
  worker_id              bigint REFERENCES workers (id),
  problem_id             text NOT NULL,
  preset                 text NOT NULL,
  gpu_model              text NOT NULL,        -- the worker's model (the series key)
  device_kind            text NOT NULL,
  status                 text NOT NULL,        -- JobStatus name: ok, mismatch, crashed, timeout...
  message                text NOT NULL DEFAULT '',
  reference_median_ms    double precision,
  custom_median_ms       double precision,
  speedup                double precision,
  speedup_ci_low         double precision,
  speedup_ci_high        double precision,
  custom_tflops          double precision,
  custom_gbps            double precision,
  floor_ms               double precision,
  max_abs_error          double precision,
  max_rel_error          double precision,
  reference_samples_ms   double precision[] NOT NULL DEFAULT '{}',
  custom_samples_ms      double precision[] NOT NULL DEFAULT '{}',
  wall_ms                double precision,     -- the job's wall time on the worker
  commit_sha             text,                 -- copied from the run: series are ordered by it
  branch                 text,
  commit_time            timestamptz,
  environment            jsonb NOT NULL DEFAULT '{}',
  result                 jsonb NOT NULL,       -- the whole JobResult as the worker sent it
  created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX results_run ON results (run_id);
CREATE INDEX results_series ON results (problem_id, gpu_model, preset, commit_time, created_at);

-- The newest result per (problem, GPU model, preset).
CREATE VIEW latest_results AS
SELECT DISTINCT ON (problem_id, gpu_model, preset) *
FROM results
ORDER BY problem_id, gpu_model, preset, created_at DESC;

-- One point per (result, variant): the series (problem, GPU model, variant, preset) over commits.
CREATE VIEW series_points AS
SELECT r.id AS result_id, r.run_id, r.problem_id, r.gpu_model, r.preset, v.variant,
       r.commit_sha, r.branch, r.commit_time, r.created_at, r.status,
       v.median_ms, v.samples_ms, r.speedup, r.speedup_ci_low, r.speedup_ci_high
FROM results r
CROSS JOIN LATERAL (VALUES ('custom', r.custom_median_ms, r.custom_samples_ms),
                           ('reference', r.reference_median_ms, r.reference_samples_ms))
     AS v (variant, median_ms, samples_ms);

-- Read-only role for the CLI's queries (login roles are granted membership by the operator or by
-- the local stack). Roles are cluster-wide, so create it only once; two databases of one cluster
-- migrating at the same time (parallel tests) may both try: the loser's error is ignored.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kb_readonly') THEN
    CREATE ROLE kb_readonly NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL;
END
$$;
GRANT USAGE ON SCHEMA public TO kb_readonly;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO kb_readonly;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO kb_readonly;
