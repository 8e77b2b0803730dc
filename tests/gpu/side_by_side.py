#!/usr/bin/env python3
"""DayZero's executor beside PyTorch eager on the same run (tests/gpu/run.sh).

    side_by_side.py MEASUREMENTS.json TORCH.json

MEASUREMENTS.json is `dayzero run --out`; TORCH.json is torch_eager.py's on the same
weights, prompts and decode steps. Prints, per phase, DayZero's step time (prefill_s,
decode_step_mean_s: the run's own steps, host staging included), the sum of its ops'
kernel times (ops[].mean_s x calls, per decode step; CUDA events when timing.clock is
`device`), and PyTorch's fastest repeat and first run; then where DayZero's step
time beyond its kernels goes: the host's wall time inside its ops' real calls
(ops[].host_s: launches, uploads, waits; 0 in files before 2026-12-04), the ops that
took the most of it, and what is left between the ops (the forward's own host work). Exit status 0 when DayZero's
step times are both below PyTorch's fastest repeat, 1 when not (the table says by how
much), 2 when the two files are not the same run.
"""
import json
import sys


def kernel_seconds(m, phase):
    return sum(op["mean_s"] * op["calls"] for op in m["ops"] if op["phase"] == phase)


def host_seconds(m, phase):
    return sum(op.get("host_s", 0.0) for op in m["ops"] if op["phase"] == phase)


def host_breakdown(dz, phase, step_s, per):
    """One line: the phase's step, its ops' host time, the top ops by it, the rest."""
    ops = sorted((op for op in dz["ops"] if op["phase"] == phase), key=lambda o: -o.get("host_s", 0.0))
    inside = host_seconds(dz, phase) / per
    top = ", ".join(f"{o['name']} {o.get('host_s', 0.0) / per * 1e3:.3f}" for o in ops[:4])
    return (f"{phase}: step {step_s * 1e3:.3f} ms, in its ops' real calls {inside * 1e3:.3f} ms "
            f"(most: {top}), between ops {(step_s - inside) * 1e3:.3f} ms")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    dz = json.load(open(sys.argv[1]))
    pt = json.load(open(sys.argv[2]))
    steps = len(dz["decode_step_s"])
    batch, prompt_len = len(dz["prompts"]), len(dz["prompts"][0])
    if (pt["batch"], pt["prompt_len"], pt["decode_steps"]) != (batch, prompt_len, steps):
        print(f"not the same run: DayZero {batch} x {prompt_len} + {steps} steps, "
              f"PyTorch {pt['batch']} x {pt['prompt_len']} + {pt['decode_steps']}", file=sys.stderr)
        return 2
    rows = [
        ("prefill", dz["prefill_s"], kernel_seconds(dz, "prefill"), pt["prefill_s"], pt["first_prefill_s"]),
        ("decode step", dz["decode_step_mean_s"], kernel_seconds(dz, "decode") / max(1, steps),
         pt["decode_step_mean_s"], pt["first_decode_step_mean_s"]),
    ]
    print(f"{dz['weights']}: {batch} sequence(s) x {prompt_len} prompt tokens, {steps} decode steps; "
          f"DayZero backend {dz['backend']} (op clock: {dz['timing']['clock']}), "
          f"PyTorch {pt['torch']} eager {pt['dtype']} ({pt['attention']} attention) on {pt['device']}, "
          f"weights {pt.get('weights_as', 'as the checkpoint stores them')}")
    print(f"{'phase':<12} {'DayZero step ms':>16} {'DayZero kernels ms':>19} {'PyTorch ms':>11} "
          f"{'PyTorch 1st ms':>15} {'PyTorch/DayZero':>16}")
    faster = True
    for name, step, kernels, torch_s, torch_first in rows:
        ratio = torch_s / step if step > 0 else float("inf")
        faster = faster and step < torch_s
        print(f"{name:<12} {step * 1e3:>16.3f} {kernels * 1e3:>19.3f} {torch_s * 1e3:>11.3f} "
              f"{torch_first * 1e3:>15.3f} {ratio:>15.2f}x")
    print("host time: " + host_breakdown(dz, "prefill", dz["prefill_s"], 1))
    print("host time: " + host_breakdown(dz, "decode", dz["decode_step_mean_s"], max(1, steps)))
    print(f"greedy tokens agreeing with DayZero's (leading, per sequence): "
          f"{pt['tokens_agreeing']} of {pt['tokens_compared']}")
    print("DayZero is faster in both phases" if faster else "DayZero is NOT faster in both phases")
    return 0 if faster else 1


if __name__ == "__main__":
    sys.exit(main())
