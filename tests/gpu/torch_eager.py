#!/usr/bin/env python3
"""The same run in PyTorch eager (transformers), for the side-by-side of tests/gpu/run.sh.

    torch_eager.py MEASUREMENTS.json --out TORCH.json [--device cuda|cpu] [--dtype bf16|fp32]

Reads a `dayzero run` Measurements file for what to run: the weights directory it ran
(`weights`, a checkpoint `dayzero synth` wrote or a real one), the prompts' token ids
(`prompts`, one sequence per row) and the number of decode steps (`decode_step_s`).
Loads that checkpoint with transformers' AutoModelForCausalLM (an FP8 checkpoint keeps
its FP8 weights through transformers' own quantizer, as its config.json says; where
that quantizer's kernels are not installed, the weights dequantized to BF16 at load,
said in `weights_as`), then
runs prefill of every prompt at once and greedy decode steps with the KV cache:
one untimed run first (CUDA context, kernel loading, allocator), then `--repeats`
timed runs, each step bracketed by device synchronisations. Writes the first run's
and the fastest repeat's prefill and mean decode step, and how many greedy tokens
agree with DayZero's. Exit status 0 when the model ran, 2 when torch, transformers or
the device is missing (the caller reports a skip), 1 otherwise.
"""
import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("measurements", help="a `dayzero run --out` file")
    p.add_argument("--out", required=True, help="where to write the timings (JSON)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--dtype", default=None, choices=["bf16", "fp32"],
                   help="activations and unquantized weights (default: bf16 on cuda, fp32 on cpu)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs after the untimed one")
    return p.parse_args()


def load_model(weights, device, dtype, transformers, torch, dequantize_fp8=False):
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    major = int(transformers.__version__.split(".")[0])
    kwargs = {"dtype": torch_dtype} if major >= 5 else {"torch_dtype": torch_dtype}
    quant = json.load(open(os.path.join(weights, "config.json"))).get("quantization_config", {})
    block = tuple(quant.get("weight_block_size", (128, 128)))
    if quant.get("quant_method") == "fp8":
        allow_partial_fp8_blocks(torch, block)  # wherever transformers dequantizes (no GPU, or asked to)
    if dequantize_fp8:
        # transformers' FineGrainedFP8Config(dequantize=True): the FP8 blocks times their
        # scales, as BF16 weights, at load
        kwargs["quantization_config"] = transformers.FineGrainedFP8Config(weight_block_size=block, dequantize=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(weights, **kwargs)
    return model.to(device).eval()


def allow_partial_fp8_blocks(torch, block):
    """transformers 5's FP8 dequantization at load divides a weight's rows and columns by
    its scale grid and stops where they do not divide: DeepSeek-V3's kv_a_proj_with_mqa is
    576 x 7,168 with a 5 x 56 grid of 128 x 128 blocks, the last block row partial (as
    DeepSeek's own weight_dequant treats it: scale block i covers rows [128 i, 128 i + 128)
    and the grid is rounded up); where the rows happen to divide by the grid (192 rows, 2
    blocks) it dequantizes with blocks of the wrong size. Patched here for such grids only;
    every other weight takes transformers' own path. Returns whether the patch is in place."""
    try:
        from transformers.integrations import finegrained_fp8
    except ImportError:
        return False
    cls = getattr(finegrained_fp8, "Fp8Dequantize", None)
    if cls is None or not hasattr(cls, "_dequantize_one"):
        return False
    original = cls._dequantize_one
    block_rows, block_cols = block

    def dequantize_one(self, quantized, scales, output_dtype=None):
        rows, cols = quantized.shape[-2:]
        grid = tuple(scales.shape[-2:]) if scales.dim() >= 2 else None
        # A grid of the configured blocks, rounded up, over a weight they do not tile: its
        # last blocks partial (transformers would divide by the grid: an error, or when
        # that divides, blocks of the wrong size).
        partial = (grid is not None and quantized.is_floating_point() and scales.dtype != torch.uint8
                   and (rows != grid[0] * block_rows or cols != grid[1] * block_cols)
                   and grid == (-(-rows // block_rows), -(-cols // block_cols)))
        if not partial:
            return original(self, quantized, scales, output_dtype)
        s = scales.to(torch.float32).repeat_interleave(block_rows, dim=-2)[..., :rows, :]
        s = s.repeat_interleave(block_cols, dim=-1)[..., :cols]
        return (quantized.to(torch.float32) * s).to(output_dtype or torch.bfloat16)

    cls._dequantize_one = dequantize_one
    return True


def can_dequantize_fp8(transformers):
    """Whether this transformers can load an FP8 checkpoint as BF16 (FineGrainedFP8Config's dequantize)."""
    import inspect
    config = getattr(transformers, "FineGrainedFP8Config", None)
    return config is not None and "dequantize" in inspect.signature(config.__init__).parameters


def one_run(model, prompts, decode_steps, sync, torch):
    """Prefill then greedy decode; returns (prefill_s, [step_s], tokens per sequence)."""
    with torch.inference_mode():
        sync()
        t0 = time.perf_counter()
        out = model(input_ids=prompts, use_cache=True)
        sync()
        prefill_s = time.perf_counter() - t0
        cache = out.past_key_values
        nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        tokens = [nxt]
        steps = []
        for _ in range(decode_steps):
            sync()
            t0 = time.perf_counter()
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            sync()
            steps.append(time.perf_counter() - t0)
            cache = out.past_key_values
            nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens.append(nxt)
        return prefill_s, steps, torch.cat(tokens, dim=1).tolist()


def token_agreement(ours, theirs):
    """Leading tokens equal per sequence, summed, over the tokens compared."""
    agree = compared = 0
    for a, b in zip(ours, theirs):
        n = min(len(a), len(b))
        compared += n
        for i in range(n):
            if a[i] != b[i]:
                break
            agree += 1
    return agree, compared


def main():
    a = parse_args()
    m = json.load(open(a.measurements))
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"torch_eager: skipped: {e}", file=sys.stderr)
        return 2
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_eager: skipped: torch sees no CUDA device", file=sys.stderr)
        return 2
    dtype = a.dtype or ("bf16" if a.device == "cuda" else "fp32")
    decode_steps = len(m["decode_step_s"])
    prompts = torch.tensor(m["prompts"], dtype=torch.long, device=a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)

    t0 = time.perf_counter()
    weights_as = "as the checkpoint stores them"
    try:
        model = load_model(m["weights"], a.device, dtype, transformers, torch)
        first = one_run(model, prompts, decode_steps, sync, torch)
    except ImportError as e:
        # An FP8 checkpoint whose kernels transformers cannot load (the `kernels`
        # package missing, as on the GPU machine): the same weights dequantized to BF16.
        if "fp8" not in str(e).lower() or not can_dequantize_fp8(transformers):
            raise
        print(f"torch_eager: FP8 kernels unavailable ({e}); loading the FP8 weights as BF16", file=sys.stderr)
        weights_as = "FP8 weights dequantized to BF16 at load (transformers' FP8 kernels not installed)"
        t0 = time.perf_counter()
        model = load_model(m["weights"], a.device, dtype, transformers, torch, dequantize_fp8=True)
        first = one_run(model, prompts, decode_steps, sync, torch)
    load_s = time.perf_counter() - t0  # with the first run
    runs = [one_run(model, prompts, decode_steps, sync, torch) for _ in range(a.repeats)]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    agree, compared = token_agreement(m["tokens"], first[2])
    result = {
        "what": "PyTorch eager (transformers AutoModelForCausalLM, default attention), greedy, KV cache",
        "measurements": a.measurements,
        "weights": m["weights"],
        "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": dtype,
        "attention": getattr(model.config, "_attn_implementation", "unknown"),
        "batch": len(m["prompts"]),
        "prompt_len": len(m["prompts"][0]),
        "decode_steps": decode_steps,
        "weights_as": weights_as,
        "load_and_first_run_s": load_s,
        "first_prefill_s": first[0],
        "first_decode_step_mean_s": mean(first[1]),
        "prefill_s": min(r[0] for r in runs) if runs else first[0],
        "decode_step_mean_s": min(mean(r[1]) for r in runs) if runs else mean(first[1]),
        "repeats": a.repeats,
        "tokens_agreeing": agree,
        "tokens_compared": compared,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else 0,
    }
    with open(a.out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
