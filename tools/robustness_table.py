#!/usr/bin/env python3
"""The robustness table (docs/kernels.md) from a `kb bench --json-out` file: per problem and
robustness distribution (executor/robustness_trials.h), the max error of the reference and of the
custom against the golden model, as the max abs error and as a multiple of the spec's tolerance
(the "excess": > 1 is outside), with the trial's verdict.

usage: tools/robustness_table.py BENCH_JSON
"""
import json
import sys

KINDS = ["shift", "scale", "centered", "random_affine"]


def cell(trial):
    def excess(v):
        return "inf" if v is None else f"{v:.3g}"

    verdict = trial["verdict"]
    mark = f" **{verdict}**" if verdict not in ("pass",) else ""
    return (f"{excess(trial['ref_excess'])} / {excess(trial['custom_excess'])}"
            f" ({trial['ref_err']:.2g} / {trial['custom_err']:.2g}){mark}")


def main():
    bench = json.load(open(sys.argv[1]))
    print("Each cell: reference / custom error as a multiple of the tolerance (max abs error in "
          "parentheses), against the golden model; a verdict other than pass is named.\n")
    print("| id | preset | " + " | ".join(KINDS) + " |")
    print("|---|---|" + "---|" * len(KINDS))
    counts = {}
    for r in sorted(bench["results"], key=lambda r: r["problem_id"]):
        trials = {t["kind"]: t for t in r.get("robustness") or []}
        for t in trials.values():
            counts[t["verdict"]] = counts.get(t["verdict"], 0) + 1
        preset = next((t["preset"] for t in trials.values()), "-")
        cells = [cell(trials[k]) if k in trials else "-" for k in KINDS]
        if not trials and r.get("robustness_note"):
            cells = [r["robustness_note"]] + [""] * (len(KINDS) - 1)
        print(f"| {r['problem_id']} | {preset} | " + " | ".join(cells) + " |")
    print("\nVerdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
