#include "serve/engine.h"

#include <algorithm>
#include <cmath>

namespace dayzero::serve {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Sources of every default below, with versions and caveats: docs/ENGINE_DEFAULTS.md.

// vLLM V1, v0.11.0 (read from the released wheel; v0.10.2 the same unless noted).
EngineProfile vllm_defaults(const Deployment& d) {
  EngineProfile p;
  p.engine = Engine::vllm;
  // Scheduler.schedule (vllm/v1/core/sched/scheduler.py): RUNNING requests first,
  // then WAITING ones FCFS, prompt chunks and decodes in one token budget.
  p.policy = PrefillPolicy::mixed;
  // EngineArgs._set_default_args (vllm/engine/arg_utils.py), OpenAI server on a GPU
  // of >= 70 GiB: max_num_batched_tokens 8192, max_num_seqs 1024 (2048 / 256 below).
  const bool big = d.device_mem_bytes >= 70 * kGiB;
  p.token_budget = big ? 8192 : 2048;
  p.max_running = std::min<int64_t>(big ? 1024 : 256, p.token_budget);
  p.chunked_prefill = true;
  // Preemption by recompute of the last running request (Scheduler.schedule).
  p.reserve_whole_request = false;
  // CacheConfig.gpu_memory_utilization = 0.9 of the total memory
  // (v1/worker/gpu_worker.py, Worker.determine_available_memory: requested memory
  // minus weights, profiled activations and non-torch memory).
  p.memory = {0.9, false, p.token_budget, p.max_running};
  // CudaPlatformBase.check_and_update_config (vllm/platforms/cuda.py): 16 tokens;
  // MLA: 64 (FlashMLA, Hopper), 128 (CUTLASS MLA, Blackwell).
  p.kv_block_tokens = d.mla ? (d.fp4_tensor_cores ? 128 : 64) : 16;
  p.prefix_caching = true;       // EngineArgs._set_default_args: on for generative models
  p.overlap_scheduling = false;  // SchedulerConfig.async_scheduling = False (v0.10.2, v0.11.0)
  // Piecewise CUDA graphs captured for steps of up to min(2 x max_num_seqs, 512) tokens
  // (VllmConfig._set_cudagraph_sizes): 512 whenever a step can exceed it.
  p.cuda_graph_max_batch = 512;
  p.cuda_graph_counts_tokens = true;
  // W8A8BlockFp8LinearOp.apply (model_executor/layers/quantization/utils/fp8_utils.py):
  // the DeepGEMM, CUTLASS and Triton paths quantize the input (QuantFP8 /
  // per_token_group_quant_fp8) before the GEMM; fused_moe quantizes each expert GEMM's
  // input (moe_kernel_quantize_input). Folding it into RMSNorm (PR #27883, 2025-11)
  // takes compilation's enable_fusion.
  p.separate_activation_quant = true;
  return p;
}

// SGLang v0.5.3 (python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings).
EngineProfile sglang_defaults(const Deployment& d) {
  EngineProfile p;
  p.engine = Engine::sglang;
  // Scheduler.get_next_batch_to_run: a new prefill batch runs when there is one;
  // enable_mixed_chunk = False keeps decodes out of it.
  p.policy = PrefillPolicy::prefill_first;
  const double mem_mib = d.device_mem_bytes / kMiB;
  // chunked_prefill_size by GPU memory: < 60 GiB 4096, < 160 GiB 8192, else 16384.
  p.token_budget = mem_mib < 60 * 1024 ? 4096 : mem_mib < 160 * 1024 ? 8192 : 16384;
  // cuda_graph_max_bs: 256 below tp 4, 512 from tp 4 on (H100 / H200); 512 on B200.
  const double graph_bs = mem_mib >= 160 * 1024 || d.tp >= 4 ? 512 : 256;
  // max_running_requests: derived from the KV pool (ModelRunner.init_memory_pool);
  // the request pool holds at least 2048.
  p.max_running = 2048;
  p.chunked_prefill = true;
  // PrefillAdder.add_one_req (python/sglang/srt/managers/schedule_policy.py): only a
  // request longer than the remaining chunk is truncated; one longer than the
  // remaining input tokens of a batch that already holds a request is not added.
  p.chunk_first_prompt_only = true;
  p.reserve_whole_request = false;  // ScheduleBatch.retract_decode when decode memory runs out
  // Admission by the estimated tokens to come (schedule_policy.py, PrefillAdder;
  // new_token_ratio_tracker.py; defaults in srt/environ.py).
  p.future_tokens.on = true;
  // mem_fraction_static = (gpu_mem - reserved) / gpu_mem, reserved (MiB) = 512 +
  // 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 1024 x tp x pp / 8,
  // at least 10,240 MiB above 60 GiB; a share of the total memory for weights and
  // the KV pool (ModelRunner.profile_max_num_token).
  double reserved =
      512 + 1.5 * std::max<double>(static_cast<double>(p.token_budget), 2048) + 2 * graph_bs + 1024.0 * d.tp * d.pp / 8;
  if (mem_mib > 60 * 1024) reserved = std::max(reserved, 10240.0);
  const double fraction = std::round((mem_mib - reserved) / mem_mib * 1000) / 1000;
  p.memory = {fraction, false, p.token_budget, static_cast<int64_t>(graph_bs)};
  p.cuda_graph_max_batch = static_cast<int64_t>(graph_bs);  // decode batches captured up to it
  p.kv_block_tokens = 1;                                    // page_size 1 with the default attention backends
  // disable_overlap_schedule = False; forced off when pp > 1 (_handle_pipeline_parallelism).
  p.overlap_scheduling = d.pp == 1;
  p.prefix_caching = true;  // the radix cache is on (disable_radix_cache = False)
  // python/sglang/srt/layers/quantization/fp8_utils.py: the block-FP8 linears
  // (deepgemm_ / flashinfer_gemm_ / cutlass_w8a8_block_fp8_linear_with_fallback) call
  // sglang_per_token_group_quant_fp8 on the input, then the GEMM.
  p.separate_activation_quant = true;
  return p;
}

// TensorRT-LLM, trtllm-serve with the PyTorch backend (1.0-era sources:
// tensorrt_llm/commands/serve.py, llmapi/llm_args.py, batch_manager schedulers).
EngineProfile trtllm_defaults(const Deployment& d) {
  EngineProfile p;
  p.engine = Engine::trtllm;
  // In-flight batching: generation requests and context requests in one iteration
  // (MicroBatchScheduler); enable_chunked_prefill = False: a context goes whole, and
  // the first that does not fit ends the scan.
  p.policy = PrefillPolicy::mixed;
  p.token_budget = 8192;  // --max_num_tokens (BuildConfig.max_num_tokens)
  p.max_running = 2048;   // --max_batch_size (BuildConfig.max_batch_size)
  p.chunked_prefill = false;
  // CapacitySchedulerPolicy GUARANTEED_NO_EVICT: blocks for the whole request
  // reserved at admission, no preemption.
  p.reserve_whole_request = true;
  // --kv_cache_free_gpu_memory_fraction 0.9 of the memory free after weights and a
  // profiling run (_torch/pyexecutor/_util.py, KvCacheCreator).
  p.memory = {0.9, true, p.token_budget, p.max_running};
  p.kv_block_tokens = d.mla ? 64 : 32;  // tokens_per_block 32; 64 for MLA with FlashMLA
  p.prefix_caching = true;              // KvCacheConfig.enable_block_reuse = True
  p.overlap_scheduling = true;          // TorchLlmArgs.disable_overlap_scheduler = False
  // CudaGraphConfig(): max_batch_size 0 -> 128, decode-only batches (llm_args.py
  // validate_cuda_graph_config; without padding only the captured sizes 1-32, 64 and
  // 128 replay a graph, which is not modelled: the limit alone is).
  p.cuda_graph_max_batch = 128;
  // Its block-FP8 runs measured (DeepSeek-R1 / V3, Qwen3-235B) do not show a launch per
  // GEMM input for the activations' quantization (docs/FIDELITY.md, session 42).
  p.separate_activation_quant = false;
  return p;
}

}  // namespace

simulate::EngineKernels engine_kernels(const EngineProfile& e) { return {e.separate_activation_quant}; }

bool runs_eagerly(const EngineProfile& e, const simulate::StepBatch& b) {
  if (b.decode_contexts.empty() || !b.prefills.empty()) return false;
  const int64_t size = e.cuda_graph_counts_tokens ? b.tokens() : static_cast<int64_t>(b.decode_contexts.size());
  return size > e.cuda_graph_max_batch;
}

Deployment deployment_of(const plan::Plan& p, const model::Model& m, const topology::DeviceSpec& dev) {
  return {dev.mem_bytes, dev.peak_flops_for(topology::ComputeDtype::fp4) > 0, p.attention.tp, p.pp,
          m.config.attention == model::AttentionKind::mla};
}

EngineProfile default_profile(Engine e, const Deployment& d) {
  switch (e) {
    case Engine::vllm: return vllm_defaults(d);
    case Engine::sglang: return sglang_defaults(d);
    case Engine::trtllm: return trtllm_defaults(d);
  }
  return vllm_defaults(d);
}

}  // namespace dayzero::serve
