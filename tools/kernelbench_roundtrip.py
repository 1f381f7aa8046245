#!/usr/bin/env python3
"""Proves the importer on the hand-written specs: re-imports every problem of a suite
(default kernelbench22) from its upstream KernelBench file and compares the result with the
spec in problems/, at the full preset (both sides' dims resolved):

  * inputs: order, names, shapes, generators;
  * parameters: state_dict keys, shapes, inits (and the weight a bias's fan-in comes from);
  * graph: node by node, the op, the inputs (intermediates by the index of the node that makes
    them, so that tensor and node names may differ) and every attribute resolved to numbers;
  * output, tolerance, robustness skips.
Labels (name, family, node and tensor names, dim names) are not compared: the hand-written specs
chose their own. Prints one line per problem and the differences; exits 1 on any difference.

Needs python3-torch and python3-yaml, and the upstream files (tools/README.md says how to get
them). Usage:
  kernelbench_roundtrip.py --kernelbench DIR [--suite kernelbench22] [--only ID,...]
where DIR holds KernelBench/level1/... (a checkout or `git archive` of the upstream repository
at the commit the specs' `upstream:` names).
"""
import argparse
import glob
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelbench_import as importer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS_DIR = os.path.join(REPO_ROOT, "problems")


def spec_path(problem_id):
    matches = glob.glob(os.path.join(PROBLEMS_DIR, problem_id + "_*.yaml"))
    if len(matches) != 1:
        raise SystemExit(f"{problem_id}: expected one problems/{problem_id}_*.yaml, got {matches}")
    return matches[0]


def upstream_file(spec):
    """The file the spec names (`upstream: {repo, path, commit}`), KernelBench/level<L>/..."""
    return spec["upstream"]["path"]


def resolve(value, dims):
    """Integer expressions (ints or strings over the dims) -> ints, recursively."""
    if isinstance(value, list):
        return [resolve(v, dims) for v in value]
    if isinstance(value, str):
        try:
            return importer._evaluate(value, dims)
        except Exception:  # noqa: BLE001 (a plain string attribute such as a reduction)
            return value
    return value


def canonical(spec, preset="full"):
    dims = spec["presets"][preset]
    made_by = {n["out"]: f"%{i}" for i, n in enumerate(spec["graph"])}
    name = lambda t: made_by.get(t, t)  # noqa: E731
    skip = {"name", "op", "in", "out"}
    graph = []
    for n in spec["graph"]:
        attrs = {k: (resolve(v, dims) if k != "dims" and k != "dim" else v)
                 for k, v in n.items() if k not in skip}
        attrs = {k: (float(v) if isinstance(v, float) else v) for k, v in attrs.items()}
        graph.append({"op": n["op"], "in": [name(t) for t in n["in"]], **attrs})
    return {
        "inputs": [(i["name"], resolve(i["shape"], dims), i["generator"]) for i in spec["inputs"]],
        "parameters": {p["name"]: (resolve(p["shape"], dims), p["init"], p.get("fan_in_of"))
                       for p in spec["parameters"]},
        "graph": graph,
        "output": name(spec["output"]),
        "tolerance": (float(spec["tolerance"]["atol"]), float(spec["tolerance"]["rtol"])),
        "robustness": sorted((spec.get("robustness") or {}).get("skip", [])),
    }


def differences(hand, imported):
    diffs = []
    for key in ("inputs", "output", "tolerance", "robustness"):
        if hand[key] != imported[key]:
            diffs.append(f"{key}: spec {hand[key]} / imported {imported[key]}")
    for p in sorted(set(hand["parameters"]) | set(imported["parameters"])):
        a, b = hand["parameters"].get(p), imported["parameters"].get(p)
        if a != b:
            diffs.append(f"parameter {p}: spec {a} / imported {b}")
    if len(hand["graph"]) != len(imported["graph"]):
        diffs.append(f"graph: spec has {len(hand['graph'])} nodes, imported "
                     f"{len(imported['graph'])}")
    for i, (a, b) in enumerate(zip(hand["graph"], imported["graph"])):
        if a != b:
            diffs.append(f"graph[{i}]: spec {a} / imported {b}")
    return diffs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", required=True,
                        help="directory holding KernelBench/level1/... (upstream files)")
    parser.add_argument("--suite", default="kernelbench22")
    parser.add_argument("--only", help="comma-separated ids")
    args = parser.parse_args(argv)
    with open(os.path.join(PROBLEMS_DIR, "suites.yaml"), encoding="utf-8") as f:
        ids = yaml.safe_load(f)["suites"][args.suite]
    if args.only:
        ids = [i for i in ids if i in args.only.split(",")]
    failed = []
    for problem_id in ids:
        with open(spec_path(problem_id), encoding="utf-8") as f:
            hand = yaml.safe_load(f)
        path = upstream_file(hand)
        with open(os.path.join(args.kernelbench, path), encoding="utf-8") as f:
            source = f.read()
        try:
            imported = importer.import_problem(source, path, problem_id, "0" * 40)
        except importer.ImportError_ as error:
            failed.append(problem_id)
            print(f"{problem_id} IMPORT FAILED ({path}): {error}")
            continue
        diffs = differences(canonical(hand), canonical(imported))
        status = "same graph and configuration" if not diffs else f"{len(diffs)} difference(s)"
        print(f"{problem_id} {status}  ({path}; imported dims {imported['dims']})")
        for d in diffs:
            print(f"    {d}")
        if diffs:
            failed.append(problem_id)
    print(f"round trip: {len(ids) - len(failed)} of {len(ids)} agree"
          + (f"; differ: {','.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
