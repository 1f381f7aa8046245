#!/usr/bin/env python3
"""The outside oracle: real PyTorch computes the expected outputs that the golden models are
checked against (tests/unit/kernels/golden_fixture_test.cpp).

For every problem and every case of CASES below:
  1. `kb problems generate ID --dims ... --seed S --trial T --out DIR` writes the case's inputs
     and parameters (DIR/meta.json and one float32 .npy per tensor), drawn by our generator;
  2. the problem's KernelBench source, the upstream file its spec names (`upstream:`, read under
     --kernelbench DIR; tools/README.md says how to get it), is exec'd in a fresh module; its size
     globals are set to the case's dims (GLOBALS below); the model is
     built exactly as KernelBench builds it (torch.manual_seed(42); Model(*get_init_inputs()),
     training mode), our parameters are loaded into it, and it runs in float64 under no_grad;
  3. tests/fixtures/oracle/ID/CASE.npy (the output, float64, C order) and CASE.json (dims, seed,
     trial, the tensors' checksums, output shape, torch version) are written.
The model comes from KernelBench's source, not from our spec, so a spec whose effective
configuration is wrong fails here: the file's get_inputs() shapes, the model's parameter names and
shapes, and its output shape must all equal what `kb problems generate` says, or the script stops.

Needs python3-torch and python3-numpy (Debian: apt-get install python3-torch python3-numpy
python3-yaml) and a built `kb`. See tools/README.md.

Without --kernelbench, the hand-written problems (those of CASES) fall back to the source restored
from the seed documents (--seeds, tools/seed_source.py), which hold the same KernelBench files;
both give the same fixtures, byte for byte.

Imported problems (tools/kernelbench_import.py: every problem without a CASES entry) are built
from their upstream file too. Their dims are the file's globals by name, so a case overrides those globals before the
module runs (derived globals follow); their cases are the spec's `small` preset (seed 1, trial 0)
and `odd` preset (seed 2, trial 1).

Usage: pytorch_oracle.py --kb build/cli/kb --kernelbench DIR [--only ID[,ID...]] [--out DIR]
                         [--imported] [--seeds DIR]   (--imported: every imported problem)
"""
import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_source  # noqa: E402
import kernelbench_import  # noqa: E402

REPO_ROOT = seed_source.REPO_ROOT
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "fixtures", "oracle")
DEFAULT_KB = os.path.join(REPO_ROOT, "build", "cli", "kb")
PROBLEMS_DIR = os.path.join(REPO_ROOT, "problems")

# The seed's module-level size globals, as Python expressions over our spec's dims. Globals that
# are derived from sizes in the seed (bias_shape = (out_channels, 1, 1)) are listed too, because
# the seed computed them once, at exec time, from the original sizes. Everything not listed
# (kernel sizes, strides, eps, ...) keeps the seed's value. The order of the seed's get_inputs()
# decides which global a spatial dim binds to (L1_054 draws (.., depth, width, height)).
GLOBALS = {
    "L1_003": {"batch_size": "batch", "m": "M", "k": "K", "n": "N"},
    "L1_054": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "depth": "D", "width": "H", "height": "W"},
    "L1_060": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "width": "D", "height": "H", "depth": "W"},
    "L1_070": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "depth": "D", "height": "H", "width": "W"},
    "L1_073": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "depth": "D", "height": "H", "width": "W"},
    "L1_075": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W"},
    "L1_079": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out", "length": "L"},
    "L1_081": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height_in": "H", "width_in": "W"},
    "L1_098": {"batch_size": "N", "input_shape": "(D,)"},
    "L2_001": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W", "bias_shape": "(C_out, 1, 1)"},
    "L2_007": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "depth": "D", "height": "H", "width": "W", "bias_shape": "(C_out, 1, 1, 1)"},
    "L2_010": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W"},
    "L2_017": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W"},
    "L2_021": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W", "bias_shape": "(C_out, 1, 1)",
               "scale_shape": "(C_out, 1, 1)"},
    "L2_031": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W", "bias_shape": "(C_out, 1, 1)"},
    "L2_034": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "D": "D", "H": "H", "W": "W"},
    "L2_060": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "depth": "D", "height": "H", "width": "W"},
    "L2_091": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W", "bias_shape": "(C_out, 1, 1)"},
    "L2_093": {"batch_size": "N", "in_channels": "C_in", "out_channels": "C_out",
               "height": "H", "width": "W"},
    "L3_013": {"batch_size": "N", "num_input_features": "C_in",
               "num_output_features": "C_out", "height": "H", "width": "W"},
    "L3_025": {"batch_size": "N", "input_channels": "C_in", "out_channels": "C_out",
               "groups": "G", "height": "H", "width": "W"},
    "L3_031": {"batch_size": "N", "embed_dim": "C", "num_channels": "C",
               "image_height": "H", "image_width": "W"},
}


def case(name, seed, trial, **dims):
    return {"case": name, "seed": seed, "trial": trial, "dims": dims}


# Tiny dims, each problem at least twice: an "even" case (sizes multiples of 2/4/8 where the
# problem allows), an "odd" one (batch 1, sizes that are no such multiple), some a third.
# Structural constraints, from the sources (see docs/problems.md):
#   L1_075: groups=4 divides C_in and C_out.      L2_021: GroupNorm(8) -> 8 | C_out.
#   L2_034: LayerNorm(C_out) acts on the last dim W_out = 2W, so C_out = 2W.
#   L2_060: GroupNorm(4) -> 4 | C_out.            L3_031: 4 heads -> 4 | C.
#   L3_025: 4 | C_out, G | C_in, G | C_out/4, C_in != C_out (the spec has the conv shortcut).
#   L2_093: min(conv + 0.5, 0) is 0 unless the conv output is below -0.5; with few input
#     channels it never is, and the output would be all zeros. Many input channels and few
#     output channels (a wider weight bound, 1/sqrt(16 C_out)) make a share of it negative.
CASES = {
    "L1_003": [case("even", 1, 0, batch=2, M=8, K=16, N=8),
               case("odd", 2, 1, batch=1, M=7, K=13, N=5),
               case("odd_batch3", 3, 2, batch=3, M=5, K=33, N=9)],
    "L1_054": [case("even", 1, 0, N=2, C_in=2, C_out=4, D=6, H=6, W=6),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, D=5, H=7, W=9)],
    "L1_060": [case("even", 1, 0, N=2, C_in=2, C_out=4, D=6, H=8, W=10),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, D=5, H=7, W=9)],
    "L1_070": [case("even", 1, 0, N=2, C_in=4, C_out=6, D=2, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, D=3, H=5, W=1)],
    "L1_073": [case("even", 1, 0, N=2, C_in=4, C_out=8, D=2, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, D=3, H=5, W=7)],
    "L1_075": [case("even", 1, 0, N=2, C_in=8, C_out=8, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=4, C_out=12, H=3, W=5)],
    "L1_079": [case("even", 1, 0, N=2, C_in=4, C_out=8, L=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, L=7),
               case("odd_batch3", 3, 2, N=3, C_in=5, C_out=7, L=13)],
    "L1_081": [case("even", 1, 0, N=2, C_in=4, C_out=4, H=2, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=3, W=5)],
    "L1_098": [case("even", 1, 0, N=4, D=8),
               case("odd", 2, 1, N=1, D=7),
               case("odd_batch3", 3, 2, N=3, D=13)],
    "L2_001": [case("even", 1, 0, N=2, C_in=4, C_out=8, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=7, W=9)],
    "L2_007": [case("even", 1, 0, N=2, C_in=2, C_out=4, D=4, H=6, W=6),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, D=5, H=7, W=3)],
    "L2_010": [case("even", 1, 0, N=2, C_in=4, C_out=6, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=7, W=9)],
    "L2_017": [case("even", 1, 0, N=2, C_in=4, C_out=8, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=7, W=9)],
    "L2_021": [case("even", 1, 0, N=2, C_in=4, C_out=16, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=8, H=7, W=9),
               case("odd_batch3", 3, 2, N=3, C_in=5, C_out=24, H=5, W=11)],
    "L2_031": [case("even", 1, 0, N=2, C_in=4, C_out=8, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=7, W=9)],
    "L2_034": [case("even", 1, 0, N=2, C_in=4, C_out=8, D=2, H=2, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=6, D=3, H=5, W=3)],
    "L2_060": [case("even", 1, 0, N=2, C_in=2, C_out=8, D=2, H=2, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=4, D=3, H=3, W=5),
               case("odd_batch3", 3, 2, N=3, C_in=1, C_out=12, D=2, H=3, W=3)],
    "L2_091": [case("even", 1, 0, N=2, C_in=4, C_out=8, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=3, W=5)],
    "L2_093": [case("even", 1, 0, N=2, C_in=16, C_out=2, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=21, C_out=3, H=3, W=5),
               case("odd_batch3", 3, 2, N=3, C_in=9, C_out=1, H=5, W=3)],
    "L3_013": [case("even", 1, 0, N=2, C_in=4, C_out=8, H=8, W=8),
               case("odd", 2, 1, N=1, C_in=3, C_out=5, H=7, W=9)],
    "L3_025": [case("even", 1, 0, N=2, C_in=8, C_out=16, G=2, H=4, W=4),
               case("odd", 2, 1, N=1, C_in=9, C_out=12, G=3, H=5, W=7),
               case("odd_batch3", 3, 2, N=3, C_in=6, C_out=36, G=3, H=3, W=5)],
    "L3_031": [case("even", 1, 0, N=2, C=8, H=4, W=4),
               case("odd", 2, 1, N=1, C=12, H=3, W=5),
               case("odd_batch3", 3, 2, N=3, C=4, H=1, W=7)],
}


class OracleError(RuntimeError):
    pass


def load_spec(problem_id):
    """problems/<ID>_*.yaml as a dict."""
    matches = [f for f in os.listdir(PROBLEMS_DIR)
               if f.startswith(problem_id + "_") and f.endswith(".yaml")]
    if len(matches) != 1:
        raise OracleError(f"{problem_id}: expected one problems/{problem_id}_*.yaml, "
                          f"found {matches}")
    with open(os.path.join(PROBLEMS_DIR, matches[0]), encoding="utf-8") as f:
        return yaml.safe_load(f)


def spec_dims(problem_id):
    """The `dims` of problems/<ID>_*.yaml."""
    return list(load_spec(problem_id)["dims"])


def imported_ids():
    """The imported problems: every spec but the hand-written ones of CASES (which name their
    upstream file too, but whose dims are ours and mapped to the seed's globals by GLOBALS)."""
    ids = []
    for name in sorted(os.listdir(PROBLEMS_DIR)):
        if name.startswith("L") and name.endswith(".yaml"):
            problem_id = name.split("_", 2)[0] + "_" + name.split("_", 2)[1]
            if problem_id not in CASES:
                ids.append(problem_id)
    return ids


def imported_cases(spec):
    return [case("small", 1, 0, **spec["presets"]["small"]),
            case("odd", 2, 1, **spec["presets"]["odd"])]


def imported_overrides(module_globals, dims):
    """A preset's dims -> the upstream globals they name (`input_shape0`: element 0 of the tuple
    `input_shape`), as kernelbench_import.exec_module takes them."""
    overrides = {}
    for name, value in dims.items():
        if isinstance(module_globals.get(name), int):
            overrides[name] = value
            continue
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if not (m and isinstance(module_globals.get(m.group(1)), tuple)):
            raise OracleError(f"dim {name} names no global of the upstream file")
        overrides[(m.group(1), int(m.group(2)))] = value
    return overrides


def check_tables(problem_id):
    """GLOBALS and CASES of a problem must bind exactly the spec's dims."""
    dims = set(spec_dims(problem_id))
    used = {node.id for expr in GLOBALS[problem_id].values()
            for node in ast.walk(ast.parse(expr, mode="eval")) if isinstance(node, ast.Name)}
    if used != dims:
        raise OracleError(f"{problem_id}: GLOBALS uses dims {sorted(used)}, "
                          f"the spec declares {sorted(dims)}")
    for c in CASES[problem_id]:
        if set(c["dims"]) != dims:
            raise OracleError(f"{problem_id}/{c['case']}: binds {sorted(c['dims'])}, "
                              f"the spec declares {sorted(dims)}")


def run_generate(kb, problem_id, c, out_dir):
    dims = ",".join(f"{k}={v}" for k, v in c["dims"].items())
    command = [kb, "problems", "generate", problem_id, "--dims", dims, "--seed", str(c["seed"]),
               "--trial", str(c["trial"]), "--out", out_dir]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise OracleError(f"{problem_id}/{c['case']}: {' '.join(command)} failed "
                          f"({result.returncode}):\n{result.stdout}{result.stderr}")
    with open(os.path.join(out_dir, "meta.json"), encoding="utf-8") as f:
        return json.load(f)


def load_tensor(out_dir, entry, where):
    array = np.load(os.path.join(out_dir, entry["file"]))
    if array.dtype != np.float32 or list(array.shape) != list(entry["shape"]):
        raise OracleError(f"{where}: {entry['file']} is {array.dtype}{list(array.shape)}, "
                          f"meta.json says float32{entry['shape']}")
    return torch.from_numpy(np.ascontiguousarray(array))


def seed_module(problem_id, source, dims):
    """The KernelBench module, exec'd fresh, with its size globals set to `dims`."""
    module = types.ModuleType(f"kernelbench_{problem_id}")
    exec(compile(source, f"<kernelbench {problem_id}>", "exec"), module.__dict__)
    for name, expr in GLOBALS[problem_id].items():
        if name not in module.__dict__:
            raise OracleError(f"{problem_id}: the KernelBench file has no global '{name}'")
        module.__dict__[name] = eval(expr, {"__builtins__": {}}, dict(dims))
    return module


def shapes_of(named):
    return {name: list(t.shape) for name, t in named}


def build_model(problem_id, module, meta, where):
    """Model(*get_init_inputs()) as KernelBench builds it, checked against meta.json."""
    torch.manual_seed(42)
    model = module.Model(*module.get_init_inputs())
    drawn = [list(t.shape) for t in module.get_inputs()]  # the file's own input shapes
    expected_inputs = [list(e["shape"]) for e in meta["inputs"]]
    if drawn != expected_inputs:
        raise OracleError(f"{where}: the file's get_inputs() draws shapes {drawn}, "
                          f"the spec's inputs are {expected_inputs}")
    ours = {e["name"]: list(e["shape"]) for e in meta["params"]}
    theirs = shapes_of(model.named_parameters())
    if ours != theirs:
        raise OracleError(f"{where}: parameters differ (effective configuration?)\n"
                          f"  PyTorch model: {theirs}\n  spec/meta.json: {ours}")
    return model


def load_parameters(model, params, where):
    """strict=True for parameters; only buffers (BatchNorm running stats) may stay default."""
    result = model.load_state_dict(params, strict=False)
    buffers = {name for name, _ in model.named_buffers()}
    not_buffers = [k for k in result.missing_keys if k not in buffers]
    if not_buffers or result.unexpected_keys:
        raise OracleError(f"{where}: load_state_dict: missing {not_buffers}, "
                          f"unexpected {result.unexpected_keys}")


def run_case(kb, problem_id, source, c, out_root, upstream=None):
    where = f"{problem_id}/{c['case']}"
    with tempfile.TemporaryDirectory(prefix=f"kb_oracle_{problem_id}_") as tmp:
        meta = run_generate(kb, problem_id, c, tmp)
        if meta["dims"] != c["dims"] or meta["id"] != problem_id:
            raise OracleError(f"{where}: meta.json is for {meta['id']} {meta['dims']}")
        inputs = [load_tensor(tmp, e, where) for e in meta["inputs"]]
        params = {e["name"]: load_tensor(tmp, e, where) for e in meta["params"]}
    if upstream is None:
        module = seed_module(problem_id, source, c["dims"])
    else:
        plain, _ = kernelbench_import.exec_module(source, upstream)
        overrides = imported_overrides(plain.__dict__, c["dims"])
        module, _ = kernelbench_import.exec_module(source, upstream, overrides)
    model = build_model(problem_id, module, meta, where)
    load_parameters(model, params, where)
    model = model.double()  # stays in training mode, as KernelBench runs it
    with torch.no_grad():
        output = model(*[t.double() for t in inputs])
    if list(output.shape) != list(meta["output_shape"]):
        raise OracleError(f"{where}: PyTorch output shape {list(output.shape)}, "
                          f"spec output shape {meta['output_shape']}")
    # np.array, not np.ascontiguousarray: the latter turns a 0-d output (L1_098) into shape (1,).
    expected = np.array(output.numpy(), dtype=np.float64, order="C")
    write_fixture(out_root, problem_id, c, meta, expected)
    return expected


def write_fixture(out_root, problem_id, c, meta, expected):
    directory = os.path.join(out_root, problem_id)
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, c["case"] + ".npy"), expected)
    record = {
        "id": problem_id,
        "case": c["case"],
        "dims": c["dims"],
        "seed": c["seed"],
        "trial": c["trial"],
        "checksums": {e["name"]: e["checksum"] for e in meta["inputs"] + meta["params"]},
        "output_shape": list(expected.shape),
        "torch_version": torch.__version__,
        "dtype": "float64",
        "generated_by": "tools/pytorch_oracle.py",
    }
    with open(os.path.join(directory, c["case"] + ".json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


def upstream_source(spec, kernelbench):
    """The text of the upstream file the spec names, under `kernelbench`."""
    path = spec["upstream"]["path"]
    with open(os.path.join(kernelbench, path), encoding="utf-8") as f:
        return f.read()


def regenerate(kb, problem_id, seed, out_root, kernelbench=None):
    spec = load_spec(problem_id)
    upstream = None
    if problem_id in CASES:
        check_tables(problem_id)
        source = (upstream_source(spec, kernelbench) if kernelbench is not None
                  else seed_source.module_source(problem_id, seed=seed))
        cases = CASES[problem_id]
    else:
        upstream = spec["upstream"]["path"]
        if kernelbench is None:
            raise OracleError(f"{problem_id} is imported from {upstream}: give --kernelbench DIR")
        source = upstream_source(spec, kernelbench)
        cases = imported_cases(spec)
    shutil.rmtree(os.path.join(out_root, problem_id), ignore_errors=True)
    for c in cases:
        expected = run_case(kb, problem_id, source, c, out_root, upstream)
        zeros = float(np.mean(expected == 0)) if expected.size else 0.0
        print(f"{problem_id}/{c['case']:<10} dims {c['dims']} -> {list(expected.shape)}, "
              f"max|out| {np.max(np.abs(expected)):.4g}, zeros {zeros:.0%}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", default=DEFAULT_KB, help="the kb binary (default: build/cli/kb)")
    parser.add_argument("--seeds", default=seed_source.DEFAULT_SEEDS_DIR,
                        help="without --kernelbench: the seed directory (default: ../shared/seeds)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="fixture root (default: tests/fixtures/oracle)")
    parser.add_argument("--only", help="regenerate these problems only (comma-separated ids)")
    parser.add_argument("--kernelbench", help="directory holding KernelBench/level1/... "
                        "(the upstream files of imported problems)")
    parser.add_argument("--imported", action="store_true",
                        help="regenerate every imported problem (instead of the seed's)")
    args = parser.parse_args(argv)
    imported = imported_ids()
    ids = args.only.split(",") if args.only else (imported if args.imported else sorted(CASES))
    unknown = [i for i in ids if i not in CASES and i not in imported]
    if unknown:
        parser.error(f"no cases for {unknown}")
    seed = (seed_source.load_seed(args.seeds)
            if args.kernelbench is None and any(i in CASES for i in ids) else None)
    failures = []
    for problem_id in ids:
        try:
            regenerate(os.path.abspath(args.kb), problem_id, seed, args.out, args.kernelbench)
        except OracleError as error:
            failures.append(problem_id)
            print(f"FAILED {error}", file=sys.stderr)
    if failures:
        print(f"{len(failures)} problem(s) failed: {','.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
