#!/usr/bin/env python3
"""The kernels table (docs/kernels.md) from a `kb bench --json-out` file: per problem, status,
reference and custom medians, speedup with its 95% CI, TFLOP/s and GB/s of the custom kernel, its
time over the roofline floor, and the peer from docs/baselines.md (the better of PyTorch eager
and torch.compile in strict fp32) with the issues' goal: min(peer / 1.2, 1.6 x fp32 floor).

usage: tools/kernels_table.py BENCH_JSON [BASELINES_MD]
"""
import json
import math
import re
import sys


def best_peers(path):
    peers = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and re.fullmatch(r"L\d_\d{3}", cells[0]):
            peers[cells[0]] = min(float(cells[2]), float(cells[4]))  # eager, compile (strict)
    return peers


def main():
    bench = json.load(open(sys.argv[1]))
    peers = best_peers(sys.argv[2] if len(sys.argv) > 2 else "docs/baselines.md")
    print("| id | status | max abs err | reference ms | custom ms | speedup [95% CI] | TFLOP/s | GB/s "
          "| x floor | peer ms | vs peer | goal ms |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    logs = []
    for r in bench["results"]:
        pid = r["problem_id"]
        ref = r["reference"]["summary"]["median"]
        cus = r["custom"]["summary"]["median"]
        peer = peers.get(pid, float("nan"))
        goal = min(peer / 1.2, 1.6 * r["floor_ms"])
        if r["status"] == "ok" and cus > 0:
            s = r["speedup"]
            hi = s["ci_high"] if s["ci_high"] is not None else float("inf")
            logs.append(math.log(peer / cus))
            print(f"| {pid} | ok | {r['errors']['max_abs_error']:.2e} | {ref:.3f} | {cus:.3f} | "
                  f"{s['value']:.2f}x [{s['ci_low']:.3f}, {hi:.3f}] | {r['custom_tflops']:.1f} | "
                  f"{r['custom_gbps']:.0f} | {r['custom_over_floor']:.2f} | {peer:.2f} | "
                  f"{peer / cus:.2f}x | {goal:.2f}{' met' if cus <= goal else ''} |")
        else:
            print(f"| {pid} | {r['status']} | | {ref:.3f} | | | | | | {peer:.2f} | | {goal:.2f} |")
    if logs:
        print(f"\nGeometric mean over the {len(logs)} custom kernels of (peer / custom): "
              f"{math.exp(sum(logs) / len(logs)):.2f}x.")


if __name__ == "__main__":
    main()
