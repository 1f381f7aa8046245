#!/usr/bin/env python3
"""SQL for the dashboard's browser test (dashboard_browser_test.sh): a recorded history.

Two workers (one quarantined); four runs of three problems on an H200 at commits c1..c4. L1_003's
custom median goes 1.00, 1.01, 0.99, 1.25 ms (the last flagged, open); L1_019's second point was
flagged and later cleared; L2_010 fails with a mismatch in run 4. References take 2.0 ms; each
result's JSON holds its hard floor (0.4 ms). Prints SQL on stdout.
"""

PROBLEMS = ["L1_003", "L1_019", "L2_010"]
CUSTOM_MS = {"L1_003": [1.00, 1.01, 0.99, 1.25], "L1_019": [0.50, 0.56, 0.50, 0.50],
             "L2_010": [1.50, 1.50, 1.50, 1.50]}


def sha(i):
    return ("c%d" % i) * 20


def samples(m):
    return "'{%s}'" % ",".join("%.6g" % (m * f) for f in (0.99, 1.0, 1.01, 1.005, 0.995))


def main():
    out = ["BEGIN;",
           "INSERT INTO workers (id, name, device_kind, gpu_model, host, state) VALUES "
           "(1, 'w-h200-0', 'cuda', 'NVIDIA H200', 'node1', 'idle'), "
           "(2, 'w-a100-0', 'cuda', 'NVIDIA A100', 'node2', 'quarantined');"]
    job = 0
    for run in range(1, 5):
        t = 1764000000 + run * 3600
        out.append("INSERT INTO runs (id, submitted_by, suite, problems, preset, gpu_models, "
                   "commit_sha, branch, commit_time, state, submitted_at, finished_at) VALUES "
                   "(%d, 'alice', 'smoke3', '{%s}', 'full', '{NVIDIA H200}', '%s', 'main', "
                   "to_timestamp(%d), 'done', to_timestamp(%d), to_timestamp(%d));"
                   % (run, ",".join(PROBLEMS), sha(run), t, t + 60, t + 120))
        for p in PROBLEMS:
            job += 1
            m = CUSTOM_MS[p][run - 1]
            failed = p == "L2_010" and run == 4
            status = "mismatch" if failed else "ok"
            message = "max abs error 0.5 over tolerance" if failed else ""
            out.append("INSERT INTO jobs (id, run_id, problem_id, preset, seed, state, gpu_model, "
                       "worker_id) VALUES (%d, %d, '%s', 'full', 0, 'done', 'NVIDIA H200', 1);"
                       % (job, run, p))
            speed = "NULL, NULL, NULL" if failed else "%.6g, %.6g, %.6g" % (
                2.0 / m, 2.0 / m * 0.98, 2.0 / m * 1.02)
            out.append(
                "INSERT INTO results (id, job_id, run_id, attempt, worker_id, problem_id, preset, "
                "gpu_model, device_kind, status, message, reference_median_ms, custom_median_ms, "
                "speedup, speedup_ci_low, speedup_ci_high, floor_ms, reference_samples_ms, "
                "custom_samples_ms, commit_sha, branch, commit_time, result, created_at) VALUES "
                "(%d, %d, %d, 1, 1, '%s', 'full', 'NVIDIA H200', 'cuda', '%s', '%s', 2.0, %.6g, "
                "%s, 0.35, %s, %s, '%s', 'main', to_timestamp(%d), "
                "'{\"hard_floor_ms\": 0.4}', to_timestamp(%d));"
                % (job, job, run, p, status, message, m, speed, samples(2.0), samples(m), sha(run),
                   t, t + 90))
    # L1_003 at run 4 (result id 10): open; L1_019 at run 2 (result id 5): cleared.
    for result, problem, state, median in ((10, "L1_003", "flagged", 1.25),
                                           (5, "L1_019", "cleared", 0.56)):
        out.append(
            "INSERT INTO regressions (result_id, problem_id, gpu_model, variant, preset, "
            "commit_sha, median_ms, baseline_ms, ratio, bound, slow_bound_ms, p_value, "
            "adjusted_p, history_points, last_result_id, state) VALUES (%d, '%s', 'NVIDIA H200', "
            "'custom', 'full', (SELECT commit_sha FROM results WHERE id = %d), %.6g, %.6g, "
            "%.6g, %.6g, %.6g, 0.001, 0.002, 3, %d, '%s');"
            % (result, problem, result, median, median / 1.2, 1.2, median / 1.1, median / 1.1,
               result, state))
    out += ["SELECT setval(pg_get_serial_sequence('%s', 'id'), 100);" % t
            for t in ("workers", "runs", "jobs", "results")]
    out.append("COMMIT;")
    print("\n".join(out))


if __name__ == "__main__":
    main()
