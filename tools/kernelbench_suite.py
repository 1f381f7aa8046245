#!/usr/bin/env python3
"""Builds the `kernelbench-l1l2` suite: every KernelBench level 1 and level 2 problem whose ops
the catalog covers.

For each upstream file KernelBench/level{1,2}/<n>_<name>.py (id L<level>_<n:03d>):
  * an id that already has a hand-written spec in problems/ (the kernelbench22 problems; they
    name their upstream file too, but their dims and notes are ours) keeps it: one spec per id,
    and it joins the suite as it is;
  * otherwise tools/kernelbench_import.py imports the file; a spec that imports, validates
    (`kb problems validate`) and that the GPU reference can run is written to
    problems/<ID>_<name>.yaml and joins the suite; anything else is reported with its reason.
Then the suite's line in problems/suites.yaml is rewritten (the one place that says which
problems a suite has) and docs/kernelbench-coverage.md is regenerated: how many of the files
the suite covers and which ops block the rest.

The lint step needs a `kb` built with the specs in problems/ (it runs their golden models): after
a first run that adds problems, rebuild and run it again.

Usage: kernelbench_suite.py --kernelbench DIR --commit SHA [--kb build/cli/kb]
DIR holds KernelBench/level1/... at commit SHA (tools/README.md says how to get it).
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelbench_import as importer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS_DIR = os.path.join(REPO_ROOT, "problems")
SUITES = os.path.join(PROBLEMS_DIR, "suites.yaml")
COVERAGE = os.path.join(REPO_ROOT, "docs", "kernelbench-coverage.md")
SUITE = "kernelbench-l1l2"


def upstream_files(kernelbench):
    files = []
    for level in (1, 2):
        for path in glob.glob(os.path.join(kernelbench, "KernelBench", f"level{level}", "*.py")):
            number = int(os.path.basename(path).split("_", 1)[0])
            files.append((f"L{level}_{number:03d}", os.path.relpath(path, kernelbench)))
    return sorted(files)


def existing_spec(problem_id):
    matches = glob.glob(os.path.join(PROBLEMS_DIR, problem_id + "_*.yaml"))
    return matches[0] if matches else None


def hand_written_ids():
    """kernelbench22: specs written by hand, never replaced by an import."""
    with open(SUITES, encoding="utf-8") as f:
        return set(yaml.safe_load(f)["suites"]["kernelbench22"])


def validate(kb, path):
    result = subprocess.run([kb, "problems", "validate", path], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stdout + result.stderr).strip()


def trivial(kb, problem_id):
    """What `kb problems lint` finds that the suite's CI test refuses (tests/unit/common/
    problem_lint_test.cpp): an all-zero or constant output that passes, or an input a kernel may
    ignore. KernelBench has such problems (its issue #165); they stay out of the suite."""
    result = subprocess.run([kb, "problems", "lint", problem_id, "--seeds", "2"],
                            capture_output=True, text=True)
    text = result.stdout
    found = [what for what, needle in (("zeros pass", "zeros **pass**"),
                                       ("constant passes", "constant **pass**"))
             if needle in text]
    found += re.findall(r"\[high\] (input \S+) does not change the output", text)
    return ", ".join(found)


def write_suite(ids):
    with open(SUITES, encoding="utf-8") as f:
        text = f.read()
    lines, row = [""] if not ids else [], []
    for problem_id in ids:
        row.append(problem_id)
        if len(row) == 9:
            lines.append(", ".join(row))
            row = []
    if row:
        lines.append(", ".join(row))
    entry = f"  {SUITE}: [" + (",\n" + " " * (len(SUITE) + 5)).join(lines) + "]\n"
    pattern = re.compile(rf"^  {re.escape(SUITE)}: \[.*?\]\n", re.S | re.M)
    text = pattern.sub(entry, text) if pattern.search(text) else text + entry
    with open(SUITES, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--kb", default=os.path.join(REPO_ROOT, "build", "cli", "kb"))
    parser.add_argument("--only", help="comma-separated ids (does not rewrite the suite)")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip `kb problems validate` (then run it on problems/ yourself)")
    args = parser.parse_args(argv)
    members, blocked = [], {}
    hand_written = hand_written_ids()
    if not args.only:
        write_suite([])  # the old list may name specs this run removes: kb would refuse them all
    for problem_id, path in upstream_files(args.kernelbench):
        if args.only and problem_id not in args.only.split(","):
            continue
        existing = existing_spec(problem_id)
        if existing and problem_id in hand_written:
            members.append((problem_id, path, "hand-written"))
            print(f"{problem_id} hand-written spec kept ({os.path.basename(existing)})")
            continue
        with open(os.path.join(args.kernelbench, path), encoding="utf-8") as f:
            source = f.read()
        if existing:
            os.remove(existing)  # an imported spec is rewritten, or goes when it no longer imports
        try:
            spec = importer.import_problem(source, path, problem_id, args.commit,
                                           max_small_output=4 * importer.SMALL_OUTPUT_ELEMENTS)
        except importer.UnsupportedOps as error:
            blocked[problem_id] = (path, error.ops)
            print(f"{problem_id} blocked: {error}")
            continue
        except importer.ImportError_ as error:
            blocked[problem_id] = (path, [f"import: {error}"])
            print(f"{problem_id} not imported: {error}")
            continue
        except Exception as error:  # noqa: BLE001 (a model the importer has not met before)
            blocked[problem_id] = (path, [f"import: {type(error).__name__}: {error}"])
            print(f"{problem_id} not imported: {type(error).__name__}: {error}")
            continue
        out = os.path.join(PROBLEMS_DIR, f"{problem_id}_{importer.slug(spec['name'])}.yaml")
        with open(out, "w", encoding="utf-8") as f:
            f.write(importer.to_yaml(spec, f"KernelBench level {spec['level']} problem "
                                           f"{int(problem_id[3:])}, imported by "
                                           "tools/kernelbench_import.py (upstream below)."))
        reason = None if args.no_validate else validate(args.kb, out)
        if reason:
            os.remove(out)
            blocked[problem_id] = (path, [f"spec rejected: {reason.splitlines()[0]}"])
            print(f"{problem_id} rejected by the loader: {reason}")
            continue
        weak = trivial(args.kb, problem_id)
        if weak:
            os.remove(out)
            blocked[problem_id] = (path, [f"trivial check at small ({weak})"])
            print(f"{problem_id} refused: the check is trivial ({weak})")
            continue
        members.append((problem_id, path, "imported"))
        print(f"{problem_id} imported -> {os.path.relpath(out, REPO_ROOT)}")
    if not args.only:
        write_suite([m[0] for m in members])
        write_coverage(members, blocked)
    print(f"{SUITE}: {len(members)} problems; {len(blocked)} blocked")
    return 0


_LABELS = [  # an importer error -> the short name of what blocks the problem
    (r"initialization is not one the spec knows \(unknown:(\S+)\)",
     lambda m: f"nn.Parameter({m.group(1)}(...)) init"),
    (r"shape propagation failed.*node=%(\w+)", lambda m: f"no meta kernel ({m.group(1)})"),
    (r"has no attribute '(\w+)'", lambda m: f"{m.group(1)} (not in torch 1.13)"),
    (r"input generator not supported: (.*)", lambda m: f"input generator {m.group(1)}"),
    (r"no small preset", lambda m: "no small preset (sizes are literals)"),
    (r"trivial check", lambda m: "trivial check (zero/constant output passes, KernelBench #165)"),
]


def label(op):
    for pattern, make in _LABELS:
        m = re.search(pattern, op)
        if m:
            return make(m)
    return op


def write_coverage(members, blocked):
    blocked = {k: (path, [label(o) for o in ops]) for k, (path, ops) in blocked.items()}
    total = len(members) + len(blocked)
    by_op = collections.Counter()
    only = collections.Counter()
    for _, (_, ops) in blocked.items():
        for op in set(ops):
            by_op[op] += 1
        if len(set(ops)) == 1:
            only[ops[0]] += 1
    levels = collections.Counter(m[0][:2] for m in members)
    lines = [
        "# KernelBench level 1 and 2: what the `kernelbench-l1l2` suite covers",
        "",
        "Generated by `tools/kernelbench_suite.py` (do not edit by hand) from ScalingIntelligence/"
        "KernelBench at the commit named in each imported spec's `upstream`.",
        "",
        f"**{len(members)} of {total}** level 1-2 problems are in the suite "
        f"(level 1: {levels['L1']}, level 2: {levels['L2']}); "
        f"{sum(1 for m in members if m[2] == 'hand-written')} of them are kernelbench22's "
        "hand-written specs, the rest imported. The other "
        f"{len(blocked)} use something the op catalog (`common/op_catalog.h`) or the importer "
        "does not cover:",
        "",
        "| blocking op or construct | problems it blocks | ... as the only blocker |",
        "| --- | ---: | ---: |",
    ]
    for op, count in sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| `{op}` | {count} | {only.get(op, 0)} |")
    lines += ["", "## Blocked problems", "", "| id | upstream file | blocked by |",
              "| --- | --- | --- |"]
    for problem_id, (path, ops) in sorted(blocked.items()):
        lines.append(f"| {problem_id} | `{os.path.basename(path)}` | "
                     + ", ".join(f"`{o}`" for o in sorted(set(ops))) + " |")
    lines += ["", "## Suite members", "", "| id | upstream file | spec |", "| --- | --- | --- |"]
    for problem_id, path, kind in members:
        lines.append(f"| {problem_id} | `{os.path.basename(path)}` | {kind} |")
    with open(COVERAGE, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
