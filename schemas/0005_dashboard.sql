-- kbfleet schema, migration 5: the indexes behind the dashboard's pages (coordinator/dashboard.h)
-- and `kb workers`, so that each page stays under 200 ms with 1,000,000 results
-- (tests/integration/dashboard_scale_test.cpp measures every page).

-- The workers page and `kb workers` count each worker's results: an index-only count per worker
-- instead of a scan of every result.
CREATE INDEX results_worker ON results (worker_id);

-- The run list sums up each run shown (fast_1, geomean: ResultsReader::summary_rows_of_runs)
-- from its jobs and their results; these carry what it reads, so both sides are index-only scans.
-- Same keys as migration 1's results_run and jobs_run, which they replace (no extra index to
-- write; jobs' state is indexed already by jobs_open).
DROP INDEX results_run;
CREATE INDEX results_run ON results (run_id) INCLUDE (job_id, gpu_model, status, speedup);
DROP INDEX jobs_run;
CREATE INDEX jobs_run ON jobs (run_id) INCLUDE (id, state, gpu_model);
