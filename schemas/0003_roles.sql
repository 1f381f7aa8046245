-- kbfleet schema, migration 3: database roles (docs/security.md, "Database roles").
--
-- Three roles, none of which the coordinator creates at runtime:
--   the migration role  whoever runs `kb-coordinator --migrate --db ADMIN_URL` (owner of the
--                       tables; needs CREATEROLE once, for the NOLOGIN roles below);
--   kb_runtime          what kb-coordinator's login needs at runtime: read and write the queue
--                       and results, nothing else (no DDL, no CREATEROLE);
--   kb_readonly         the CLI: SELECT on what it shows; pack bytes only through no view.
-- Login roles are granted membership by the operator:
--   CREATE ROLE kb_coord LOGIN PASSWORD '...' IN ROLE kb_runtime;
--   CREATE ROLE kb_cli LOGIN IN ROLE kb_readonly;
--
-- Roles are cluster-wide: two databases of one cluster migrating at once (parallel tests) may
-- both try to create one; the loser's error is ignored.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kb_runtime') THEN
    CREATE ROLE kb_runtime NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL;
END
$$;

-- kb_readonly: no blanket grant on future tables (migration 1 gave one), and no pack bytes: a
-- pack is code every worker runs, and its bytes are only for the coordinator to serve.
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM kb_readonly;
REVOKE ALL ON packs FROM kb_readonly;
REVOKE ALL ON schema_migrations FROM kb_readonly;

-- What the CLI may know about a pack.
CREATE VIEW pack_catalog AS
SELECT hash, size_bytes, commit_sha, build_info, created_at FROM packs;
GRANT SELECT ON pack_catalog TO kb_readonly;

-- kb_runtime: the tables the coordinator reads and writes, by name, and the sequences behind
-- their ids. Tables of later migrations are granted there, to kb_runtime and (where the CLI
-- shows them) to kb_readonly, explicitly.
GRANT USAGE ON SCHEMA public TO kb_runtime;
GRANT SELECT, INSERT, UPDATE ON problems, packs, workers, runs, jobs, results, regressions TO kb_runtime;
GRANT SELECT ON schema_migrations, latest_results, series_points, pack_catalog TO kb_runtime;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO kb_runtime;
