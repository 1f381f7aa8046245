#!/usr/bin/env python3
"""Reference fidelity: our reference's median time (from `kb bench --json-out`) against PyTorch
eager in strict fp32, per problem, as a Markdown table. Eager's times come from
tools/eager_profile.py's JSON (measured in the same session, same method) or from a Markdown
table such as docs/baselines.md.

usage: tools/fidelity_table.py BENCH_JSON [EAGER_JSON | BASELINES_MD] [--reasons REASONS_JSON]
"""
import json
import re
import sys


def eager_times(path):
    if path.endswith(".json"):
        return {pid: r["median_ms"] for pid, r in json.load(open(path))["results"].items()}
    times = {}
    for line in open(path):
        m = re.match(r"\|\s*(L\d_\d{3})\s*\|[^|]*\|\s*([\d.]+)\s*\|", line)
        if m:
            times[m.group(1)] = float(m.group(2))
    return times


def main():
    bench = json.load(open(sys.argv[1]))
    eager = eager_times(sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--")
                        else "docs/baselines.md")
    reasons = {}
    if "--reasons" in sys.argv:
        reasons = json.load(open(sys.argv[sys.argv.index("--reasons") + 1]))
    print("| id | our reference (ms) | PyTorch eager strict fp32 (ms) | difference | within ±10% |")
    print("|---|---:|---:|---:|---|")
    inside = 0
    for r in bench["results"]:
        pid, ours = r["problem_id"], r["reference"]["summary"]["median"]
        theirs = eager.get(pid)
        diff = ours / theirs - 1 if theirs else float("nan")
        ok = abs(diff) <= 0.10
        inside += ok
        verdict = "yes" if ok else "no: " + reasons.get(pid, "unexplained")
        print(f"| {pid} | {ours:.3f} | {theirs:.3f} | {diff:+.1%} | {verdict} |")
    print(f"\n{inside} of {len(bench['results'])} within ±10%.")


if __name__ == "__main__":
    main()
