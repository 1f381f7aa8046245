#!/usr/bin/env python3
"""PyTorch eager in strict fp32 on the GPU, per problem: its median time and the kernels it
launches. The other half of the reference-fidelity table (docs/reference-fidelity.md): measured in
the same session, on the same GPU, with the same method as `kb bench --aa` (the L2 cache flushed
before every sample, CUDA events around one forward call, the median of many), so that our
reference and eager differ only in what they launch.

For each problem id: its spec (problems/ID_*.yaml) names the upstream KernelBench file; the file is
exec'd from --kernelbench DIR (tools/README.md says how to get it), the model is built as
KernelBench builds it (torch.manual_seed(42); Model(*get_init_inputs())) and moved to the GPU with
its get_inputs(). TF32 is off for cuDNN and cuBLAS (strict fp32), cudnn.benchmark stays off (the
heuristics pick the algorithms, as in eager by default). The upstream file's sizes are the spec's
full preset (kernelbench_roundtrip.py checks that).

Writes JSON: {"device", "torch", "cudnn", "results": {ID: {"median_ms", "samples_ms", "kernels":
[{"name", "calls", "total_us"}]}}}, the kernels of one profiled forward call, the longest first.

usage: eager_profile.py --kernelbench DIR [--only ID,...] [--samples N] [--json-out FILE]
"""
import argparse
import glob
import json
import os
import statistics
import sys
import types

import torch
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = os.path.join(REPO_ROOT, "problems", "suites.yaml")
L2_FLUSH_BYTES = 256 << 20  # > the H200's 60 MB L2


def spec_of(problem_id):
    matches = glob.glob(os.path.join(REPO_ROOT, "problems", problem_id + "_*.yaml"))
    if len(matches) != 1:
        raise SystemExit(f"{problem_id}: expected one problems/{problem_id}_*.yaml, got {matches}")
    with open(matches[0]) as f:
        return yaml.safe_load(f)


def load_model(kernelbench, spec):
    path = os.path.join(kernelbench, spec["upstream"]["path"])
    module = types.ModuleType("kernelbench_problem")
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    torch.manual_seed(42)
    model = module.Model(*module.get_init_inputs()).cuda()  # training mode, as KernelBench runs it
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    return model, inputs


def time_forward(model, inputs, samples):
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    with torch.no_grad():
        for _ in range(3):  # warm-up: handles, algorithm choice, allocator
            model(*inputs)
        for _ in range(samples):
            flush.zero_()
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return times


def kernels_of(model, inputs):
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.no_grad(), torch.profiler.profile(activities=activities) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    per_name = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = per_name.setdefault(e.name, {"name": e.name, "calls": 0, "total_us": 0.0})
            k["calls"] += 1
            k["total_us"] += e.device_time
    return sorted(per_name.values(), key=lambda k: -k["total_us"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelbench", required=True, help="DIR holding KernelBench/level1/...")
    parser.add_argument("--only", help="comma-separated ids (default: the kernelbench22 suite)")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    if args.only:
        ids = args.only.split(",")
    else:
        with open(SUITES) as f:
            ids = yaml.safe_load(f)["suites"]["kernelbench22"]
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "results": {}}
    for pid in ids:
        model, inputs = load_model(args.kernelbench, spec_of(pid))
        times = time_forward(model, inputs, args.samples)
        kernels = kernels_of(model, inputs)
        median = statistics.median(times)
        out["results"][pid] = {"median_ms": median, "samples_ms": times, "kernels": kernels}
        top = ", ".join(f"{k['name'][:48]} {k['total_us'] / 1000:.3f}" for k in kernels[:4])
        print(f"{pid} eager {median:.3f} ms | {top}", flush=True)
        del model, inputs
        torch.cuda.empty_cache()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
