#!/usr/bin/env python3
"""Quick probes of the serving fidelity on a `bench_fidelity --dump DIR` (docs/FIDELITY.md).

Not part of the build: a way to test an idea about the residual errors in seconds before
building it into the simulation and re-running bench_fidelity (minutes). Each probe refits a
simplified version of serve/serving_fit.h on the dumped parts, in sample and held out by GPU
and by model, and prints the median |relative error| of each variant. The simplification
(one set of figure scales for every device, no TTFT-TPOT coupling) makes these figures
indicative only: an idea that wins here must still win in bench_fidelity (session 12's
per-engine kernel overhead did not, nor session 33's overheads per engine x client). The
held-out figures refit only the probed terms, over the in-sample parts of every row: they
are out of sample for those terms, not for the efficiency figures, and flatter an idea
whose terms are confounded with a GPU (docs/FIDELITY.md, session 33).

    build/bench/bench_fidelity --dump /tmp/fid
    python3 tools/fidelity_probe.py repeats /tmp/fid        # the measurement's own noise
    python3 tools/fidelity_probe.py ttft-overheads /tmp/fid # request overheads per engine or engine x client
    python3 tools/fidelity_probe.py tpot-figures /tmp/fid   # figure scales shared or per engine

Needs pandas, numpy and scipy.
"""
import itertools
import sys

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear

CSV = "scenarios/fidelity/serving-measured.csv"
FIGURES = ["gemm_compute", "gemm_memory", "attention_compute", "attention_memory", "elementwise_memory",
           "kernel_overhead", "communication"]
LOWER = [1, 1, 1, 1, 1, 0, 1]  # scales of the start figures' times (serving_fit.cpp's bounds, roughly)
UPPER = [10, 2.5, 10, 2.5, 2.5, 30, 20]


def load(dump, which):
    d = pd.read_csv(CSV)
    src = d.silicon_data_source.fillna("")
    d["client"] = np.where(src.str.contains("db-dump") | src.str.match(r"source_file=20\d\d-"), "inferencex", "aiperf")
    x = pd.read_csv(f"{dump}/{which}.csv").merge(d[["id", "client", "backend_version"]], on="id")
    x["model_group"] = x.model.str.replace("R1", "V3")  # bench_fidelity holds DeepSeek-V3 and -R1 out together
    return x


def irls(a, measured, lo, hi, offset=None, rounds=20):
    """Minimizes sum |(offset + a m) / measured - 1| by reweighted least squares in [lo, hi]."""
    offset = np.zeros(len(measured)) if offset is None else offset
    w = np.ones(len(measured))
    for _ in range(rounds):
        s = np.sqrt(w) / measured
        m = lsq_linear(a * s[:, None], (measured - offset) * s, bounds=(lo, hi)).x
        w = 1 / np.maximum(np.abs((offset + a @ m) / measured - 1), 0.02)
    return m


def held_out(x, fit_predict, hold):
    """Median |error| in sample (hold None) or with each group of `hold` predicted from the rest."""
    errors = []
    for g in [None] if hold is None else x[hold].unique():
        train = x if g is None else x[x[hold] != g]
        test = x if g is None else x[x[hold] == g]
        errors.append(fit_predict(train, test))
    return float(pd.concat(errors).median())


def repeats(dump):
    x = load(dump, "in_sample")
    x["gemm_quant"] = x.gemm_quant.fillna("-")
    key = ["system", "backend", "model", "gemm_quant", "isl", "osl", "batch", "tp", "pp", "dp", "moe_tp", "moe_ep"]
    for label, k in [("same engine version", key + ["backend_version"]), ("any engine version", key)]:
        pairs = []
        for _, g in x.fillna({"backend_version": "?"}).groupby(k):
            v = g[["ttft_s", "tpot_s", "backend"]].drop_duplicates(["ttft_s", "tpot_s"])
            for (_, a), (_, b) in itertools.combinations(v.iterrows(), 2):
                pairs.append((a.backend, abs(a.ttft_s / b.ttft_s - 1), abs(a.tpot_s / b.tpot_s - 1)))
        p = pd.DataFrame(pairs, columns=["engine", "ttft", "tpot"])
        print(f"{label}: {len(p)} pairs of runs of one configuration, median |difference|")
        print(p.groupby("engine").agg(pairs=("ttft", "size"), ttft=("ttft", "median"), tpot=("tpot", "median")).round(3))


def ttft_overheads(dump):
    x = load(dump, "in_sample")
    x["gpu_parts_s"] = x.ttft_pred_s - x.ttft_request_s  # the fitted prediction without q + q1 C + k TPOT
    x["one"] = 1.0
    x["prompt_ktokens"] = x.isl / 1000

    def by(key, cols):
        def fit_predict(train, test):
            out = []
            for k, t in test.groupby(key(test)):
                tr = train[key(train) == k]
                if len(tr) < 5:
                    tr = train[train.backend == t.backend.iloc[0]]
                n = len(cols)
                m = irls(tr[cols].values, tr.ttft_s.values, [0] * n, [1, 1, 1e3, 1][:n], tr.gpu_parts_s.values)
                pred = t.gpu_parts_s + t[cols].values @ m
                out.append((pred / t.ttft_s - 1).abs())
            return pd.concat(out)
        return fit_predict

    base = ["one", "ttft_inflight", "tpot_pred_s"]  # q + q1 C + k TPOT (serving_fit.h)
    engine, client = (lambda t: t.backend), (lambda t: t.backend + "/" + t.client)
    version = lambda t: t.backend + "/" + t.backend_version.fillna("?").astype(str)
    variants = {"engine": (engine, base), "engine x client": (client, base), "engine version": (version, base),
                "engine, plus a time per prompt token": (engine, base + ["prompt_ktokens"])}
    for name, (key, cols) in variants.items():
        print(f"TTFT overheads per {name}: in sample / GPU out / model out",
              [round(held_out(x, by(key, cols), h), 4) for h in [None, "system", "model_group"]])


def tpot_figures(dump):
    x = load(dump, "start")

    def design(t, per_engine):
        cols, lo, hi = [], [], []
        for f, l, h in zip(FIGURES, LOWER, UPPER):
            v = t[f"tpot_{f}_s"].values
            for e in (["vllm", "sglang", "trtllm"] if f in per_engine else [None]):
                cols.append(v * ((t.backend == e).values if e else 1))
                lo.append(l), hi.append(h)
        cols.append((t.backend == "vllm").values * t.tpot_steps.values)  # vLLM's step overhead (no overlap)
        lo.append(0), hi.append(1e-3)
        return np.c_[cols].T, lo, hi

    def fit_predict_with(per_engine):
        def fit_predict(train, test):
            a, lo, hi = design(train, per_engine)
            m = irls(a, train.tpot_s.values, lo, hi)
            return pd.Series(np.abs(design(test, per_engine)[0] @ m / test.tpot_s.values - 1))
        return fit_predict

    for per_engine in [[], ["kernel_overhead"], ["kernel_overhead", "communication"]]:
        label = "shared" if not per_engine else "per engine: " + ", ".join(per_engine)
        print(f"TPOT figures {label}: in sample / GPU out / model out",
              [round(held_out(x, fit_predict_with(per_engine), h), 4) for h in [None, "system", "model_group"]])


if __name__ == "__main__":
    probes = {"repeats": repeats, "ttft-overheads": ttft_overheads, "tpot-figures": tpot_figures}
    if len(sys.argv) != 3 or sys.argv[1] not in probes:
        sys.exit(__doc__)
    probes[sys.argv[1]](sys.argv[2])
