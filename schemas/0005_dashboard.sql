-- kbfleet schema, migration 5: the indexes behind the dashboard's pages (coordinator/dashboard.h)
-- and `kb workers`, so that each page stays under 200 ms with 1,000,000 results
-- (tests/integration/dashboard_scale_test.cpp measures every page).

-- The workers page and `kb workers` count each worker's results: an index-only count per worker
-- instead of a scan of every result.
CREATE INDEX results_worker ON results (worker_id);
