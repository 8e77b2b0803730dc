#!/usr/bin/env python3
"""Writes the disaggregated recipes InferenceX's multi-node TensorRT-LLM, SGLang and vLLM runs launched
(scenarios/fidelity/srt-slurm-recipes.csv; docs/ENGINE_DEFAULTS.md, "Disaggregated runs").

InferenceX's `nvidia-master.yaml` lists, for each `dynamo-trt`, `dynamo-sglang` and
`dynamo-vllm` configuration, the search
space of a sequence length: each point's prefill and decode workers (count, TP, EP,
attention DP), its concurrencies (`conc-list`, which override the recipe's) and the recipe
it launches (`CONFIG_FILE=recipes/...yaml`, a file of NVIDIA/srt-slurm). A disaggregated row
of the measured CSV names the same workers and a decode batch that is the concurrency over
the decode workers, not the engine's limit: the recipe's `max_batch_size` is often smaller
(4 decode workers of `max_batch_size: 32` ran at 192 in flight). This tool reads every
version of the configuration file in an InferenceX clone, keeps the points without
speculative decoding, reads each point's recipe in an srt-slurm clone (the newest version
on the branches given, else on any ref) and writes one line per point and concurrency: the
key a row is matched by, the limits each pool's engine ran per attention-DP rank (sequences
and tokens a step: TensorRT-LLM's max_batch_size and max_num_tokens; SGLang's
max-running-requests and the smaller of chunked-prefill-size and max-prefill-tokens, both
divided by the DP size under DP attention as ServerArgs does; vLLM's max-num-seqs and
max-num-batched-tokens, which every data-parallel engine core schedules with whole; 0 where
the recipe leaves the engine's default) and where they come from, with the first and last
day the configuration listed the point.

    python3 tools/srt_slurm_recipes.py --inferencex INFERENCEX --srt-slurm SRT_SLURM \\
        [--srt-ref sa-submission-q2-2026 --srt-ref main] > scenarios/fidelity/srt-slurm-recipes.csv

Needs PyYAML.
"""
import argparse
import csv
import re
import subprocess
import sys

import yaml

COLUMNS = ["engine", "model", "gpu", "precision", "isl", "osl", "prefill_workers", "prefill_gpus", "prefill_attention_dp",
           "decode_workers", "decode_gpus", "decode_attention_dp", "concurrency", "decode_max_batch",
           "decode_max_tokens", "prefill_max_batch", "prefill_max_tokens", "first_day", "last_day", "recipe"]
CONFIGS = ["configs/nvidia-master.yaml", ".github/configs/nvidia-master.yaml"]
FRAMEWORKS = {"dynamo-trt": "trtllm", "dynamo-sglang": "sglang", "dynamo-vllm": "vllm"}
SGLANG_MAX_PREFILL_TOKENS = 16384  # ServerArgs.max_prefill_tokens default


def git(repo, *args):
    return subprocess.check_output(["git", "-C", repo, *args], stderr=subprocess.DEVNULL).decode()


def model_family(prefix):
    """The model a configuration serves, as DayZero names the family (the measured rows
    label InferenceX's DeepSeek-R1 runs DeepSeek-V3 or -R1: one architecture)."""
    p = str(prefix).lower()
    return "deepseek-r1" if p.startswith(("dsr1", "deepseek-r1")) else {"kimik2.5": "kimi-k2.5", "glm5": "glm-5"}.get(p, p)


def points(config):
    """(configuration, isl, osl, point) for every disaggregated TensorRT-LLM, SGLang or vLLM point."""
    for name, c in (config or {}).items():
        if not isinstance(c, dict) or c.get("framework") not in FRAMEWORKS:
            continue
        for seq in ((c.get("scenarios") or {}).get("fixed-seq-len") or c.get("seq-len-configs") or []):
            for p in seq.get("search-space") or []:
                yield c, seq.get("isl"), seq.get("osl"), p


def config_file(point):
    for s in (point.get("prefill") or {}).get("additional-settings") or []:
        m = re.match(r'CONFIG_FILE=(\S+)', str(s))
        if m:
            return m.group(1)
    return None


class Recipes:
    def __init__(self, repo, refs):
        self.repo, self.refs, self.cache = repo, refs, {}

    def read(self, path):
        if path not in self.cache:
            text = None
            for ref in self.refs:
                try:
                    text = git(self.repo, "show", f"{ref}:{path}")
                    break
                except subprocess.CalledProcessError:
                    pass
            if text is None:  # the newest version on any ref (before a commit that removed it)
                for c in git(self.repo, "log", "--all", "--format=%H", "--", path).split():
                    for at in (c, c + "^"):
                        try:
                            text = git(self.repo, "show", f"{at}:{path}")
                            break
                        except subprocess.CalledProcessError:
                            pass
                    if text is not None:
                        break
            self.cache[path] = yaml.safe_load(text) if text else None
        return self.cache[path]


def trtllm_limits(recipe):
    cfg = ((recipe or {}).get("backend") or {}).get("trtllm_config") or {}
    pre, dec = cfg.get("prefill") or {}, cfg.get("decode") or {}
    need = [dec.get("max_batch_size"), pre.get("max_batch_size"), pre.get("max_num_tokens")]
    if any(v is None for v in need):
        return None
    return [dec["max_batch_size"], dec.get("max_num_tokens") or dec["max_batch_size"], pre["max_batch_size"],
            pre["max_num_tokens"]]


def sglang_rank(worker):
    """A worker's limits per attention-DP rank: ServerArgs._handle_data_parallelism divides
    chunked-prefill-size, and the scheduler max-running-requests, by dp_size under DP attention."""
    dp = int(worker.get("data-parallel-size") or worker.get("dp-size") or 1)
    dp = dp if worker.get("enable-dp-attention") and dp > 1 else 1
    running = worker.get("max-running-requests")
    chunk = worker.get("chunked-prefill-size")
    step = None
    if chunk is not None and int(chunk) > 0:
        step = min(int(chunk) // dp, int(worker.get("max-prefill-tokens") or SGLANG_MAX_PREFILL_TOKENS))
    return (int(running) // dp if running else 0), (step or 0)


def sglang_limits(recipe):
    cfg = ((recipe or {}).get("backend") or {}).get("sglang_config") or {}
    pre, dec = cfg.get("prefill"), cfg.get("decode")
    if not isinstance(pre, dict) or not isinstance(dec, dict):
        return None
    d_running, _ = sglang_rank(dec)
    p_running, p_step = sglang_rank(pre)
    if not (d_running or p_running or p_step):
        return None
    return [d_running, 0, p_running, p_step]


def vllm_limits(recipe):
    """Each pool's max-num-seqs and max-num-batched-tokens: per engine core, and vLLM runs
    one engine core per data-parallel rank, each scheduling with the whole limits."""
    cfg = ((recipe or {}).get("backend") or {}).get("vllm_config") or {}
    pre, dec = cfg.get("prefill"), cfg.get("decode")
    if not isinstance(pre, dict) or not isinstance(dec, dict):
        return None
    lim = [int(w.get(k) or 0) for w in (dec, pre) for k in ("max-num-seqs", "max-num-batched-tokens")]
    return lim if any(lim) else None


def limits(engine, recipe):
    return {"trtllm": trtllm_limits, "sglang": sglang_limits, "vllm": vllm_limits}[engine](recipe)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inferencex", required=True, help="a clone of SemiAnalysisAI/InferenceX")
    ap.add_argument("--srt-slurm", required=True, help="a clone of NVIDIA/srt-slurm")
    ap.add_argument("--srt-ref", action="append", default=[], help="srt-slurm refs to read recipes at, in order")
    a = ap.parse_args()
    recipes = Recipes(a.srt_slurm, a.srt_ref or ["sa-submission-q2-2026", "HEAD"])
    lines = {}  # key -> [first day, last day, recipe]
    log = git(a.inferencex, "log", "--format=%H %cs", "--", *CONFIGS).split("\n")
    for entry in reversed([l for l in log if l]):
        commit, day = entry.split()
        for path in CONFIGS:
            try:
                config = yaml.safe_load(git(a.inferencex, "show", f"{commit}:{path}"))
                break
            except (subprocess.CalledProcessError, yaml.YAMLError):
                config = None
        for c, isl, osl, p in points(config):
            if str(p.get("spec-decoding", "none")).lower() not in ("none", "", "false"):
                continue
            file = config_file(p)
            engine = FRAMEWORKS[c["framework"]]
            lim = limits(engine, recipes.read(file)) if file else None
            if lim is None:
                continue
            pre, dec = p.get("prefill") or {}, p.get("decode") or {}
            for conc in p.get("conc-list") or []:
                key = (engine, model_family(c.get("model-prefix")), str(c.get("runner", "")).split("-")[0],
                       c.get("precision"), isl, osl, pre.get("num-worker"), pre.get("tp"),
                       int(bool(pre.get("dp-attn"))), dec.get("num-worker"), dec.get("tp"),
                       int(bool(dec.get("dp-attn"))), conc, *lim)
                if key in lines:
                    lines[key][1] = day
                else:
                    lines[key] = [day, day, file]
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(COLUMNS)
    for key in sorted(lines, key=lambda k: [str(x) for x in k] + lines[k][:1]):
        w.writerow([*key, *lines[key]])


if __name__ == "__main__":
    main()
