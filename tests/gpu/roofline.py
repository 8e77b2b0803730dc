#!/usr/bin/env python3
"""A run's ops against what the GPU reaches (tests/gpu/run.sh; issue 19's limits).

    roofline.py MEASUREMENTS.json CUDA_LIMITS.json [--decode-min 0.70] [--prefill-min 0.60] [--peak bf16|fp8]

MEASUREMENTS.json is `dayzero run --backend cuda --out` (op times from CUDA events);
CUDA_LIMITS.json is `cuda-limits --json`: the HBM roofline is its fastest device copy
(bytes read + written per second), the compute peak its cuBLASLt BF16 GEMM at 8192^3
(--peak fp8: its FP8 one, for a run whose prefill GEMMs multiply FP8).
Prints, per phase and op kind, the ops' time (sum of mean_s x calls), share of the
phase, bytes and FLOPs moved per second (from the backend's cost of each call) and
their share of the limits. Checks: the decode GEMMs (gemm and expert_gemm, which read
the weights) move bytes at --decode-min of the roofline or more, and the prefill GEMMs
compute at --prefill-min of the peak or more. Exit status 0 when both hold, 1 when not,
2 on unusable input.
"""
import argparse
import collections
import json
import sys


def limits(path, dtype="bf16"):
    entries = json.load(open(path))
    hbm = max((e["bytes_per_s"] for e in entries if e["what"].startswith("copy")), default=0.0)
    peak = max((e["flops_per_s"] for e in entries if e["what"].startswith("cublaslt gemm") and e["what"].endswith(dtype)),
               default=0.0)
    if hbm <= 0 or peak <= 0:
        raise ValueError(f"{path}: no device copy or {dtype} GEMM figure")
    return hbm, peak


def by_kind(ops):
    """(phase, kind) -> [seconds, bytes, flops, calls], over every op of every rank."""
    out = collections.defaultdict(lambda: [0.0, 0, 0, 0])
    for op in ops:
        row = out[(op["phase"], op["kind"])]
        row[0] += op["mean_s"] * op["calls"]
        row[1] += op["bytes"] * op["calls"]
        row[2] += op["flops"] * op["calls"]
        row[3] += op["calls"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("measurements")
    p.add_argument("limits")
    p.add_argument("--decode-min", type=float, default=0.70)
    p.add_argument("--prefill-min", type=float, default=0.60)
    # The peak the prefill GEMMs are held to: BF16's, or FP8's for a run whose prefill
    # GEMMs multiply FP8 (DAYZERO_CUDA_FP8_W8A8=1).
    p.add_argument("--peak", choices=["bf16", "fp8"], default="bf16")
    a = p.parse_args()
    try:
        m = json.load(open(a.measurements))
        hbm, peak = limits(a.limits, a.peak)
    except (OSError, ValueError, KeyError) as e:
        print(f"roofline: {e}", file=sys.stderr)
        return 2
    clock = m.get("timing", {}).get("clock", "host")
    print(f"{m['weights']} on backend {m['backend']} (op clock: {clock}); HBM roofline {hbm / 1e12:.2f} TB/s "
          f"(device copy), {a.peak.upper()} peak {peak / 1e12:.0f} TFLOP/s (cuBLASLt 8192^3)")
    kinds = by_kind(m["ops"])
    phase_s = collections.Counter()
    for (phase, _), r in kinds.items():
        phase_s[phase] += r[0]
    print(f"{'phase':<8} {'kind':<17} {'calls':>7} {'ms':>9} {'share':>6} {'GB/s':>8} {'% HBM':>6} {'TFLOP/s':>8} "
          f"{'% peak':>7}")
    for (phase, kind), (s, b, f, calls) in sorted(kinds.items(), key=lambda kv: (kv[0][0] != "prefill", -kv[1][0])):
        bw, fl = (b / s, f / s) if s > 0 else (0.0, 0.0)
        print(f"{phase:<8} {kind:<17} {calls:>7} {s * 1e3:>9.3f} {s / phase_s[phase] if phase_s[phase] else 0:>6.1%} "
              f"{bw / 1e9:>8.1f} {bw / hbm:>6.1%} {fl / 1e12:>8.2f} {fl / peak:>7.1%}")

    def rate(phase, kinds_wanted, what):
        s = sum(kinds[(phase, k)][0] for k in kinds_wanted if (phase, k) in kinds)
        v = sum(kinds[(phase, k)][1 if what == "bytes" else 2] for k in kinds_wanted if (phase, k) in kinds)
        return v / s if s > 0 else None

    ok = True
    for phase, what, limit, floor, name in [("decode", "bytes", hbm, a.decode_min, "of the HBM roofline"),
                                            ("prefill", "flops", peak, a.prefill_min, f"of the {a.peak.upper()} peak")]:
        r = rate(phase, ["gemm", "expert_gemm"], what)
        if r is None:
            print(f"SKIP  {phase} GEMMs: none timed")
            continue
        share = r / limit
        good = share >= floor and clock == "device"
        ok = ok and good
        print(f"{'PASS' if good else 'FAIL'}  {phase} GEMMs at {share:.1%} {name} (floor {floor:.0%})"
              + ("" if clock == "device" else "; op times are the host's, not the device's"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
