#pragma once
// Engine profiles: how vLLM, SGLang and TensorRT-LLM build each step of continuous
// batching and size their KV cache — the settings the serving simulation replays.
// Every default names where it comes from (engine.cpp); a scenario's "engine" object,
// an engine settings file and `serve`'s flags override them (serve/engine_settings.h).

#include <optional>
#include <string_view>

#include "model/model.h"
#include "plan/engine_settings.h"
#include "plan/plan.h"
#include "simulate/engine_kernels.h"
#include "simulate/step_batch.h"
#include "topology/device.h"

namespace dayzero::serve {

// The engines and how a step mixes new prompts with running decodes: the plan
// layer's vocabulary (plan/engine_settings.h), which scenarios and settings files share.
using plan::Engine;
using plan::engine_name;
using plan::kAllEngines;
using plan::parse_engine;
using plan::parse_prefill_policy;
using plan::prefill_policy_name;
using plan::PrefillPolicy;

// SGLang's admission estimate (PrefillAdder with NewTokenRatioTracker): a new request
// is admitted only while the KV cache can hold every running request's tokens plus
// `ratio` x the output it has left (each capped at `clip_tokens`), and the newcomer's
// prompt plus `ratio` x its output. The ratio starts at `init`, falls by
// (init - init x min_factor) / decay_steps after every step without a retraction down
// to init x min_factor, and goes back to `init` on a retraction or an idle engine.
struct FutureTokenEstimate {
  bool on = false;
  double init = 0.7;           // SGLANG_INIT_NEW_TOKEN_RATIO x schedule_conservativeness (1.0)
  double min_factor = 0.14;    // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
  int64_t decay_steps = 600;   // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
  int64_t clip_tokens = 4096;  // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
};

// TensorRT-LLM's attention-DP balancing (`attention_dp_config`, llm_args.py
// AttentionDpConfig; PyExecutor._balance_adp_requests): under attention DP, a step runs the
// ranks' new prompts only when every rank has one (after `batching_wait_iters` more steps
// while every rank is also decoding), or when `timeout_iters` steps have passed since the
// last such release (the count runs whether prompts wait or not), or when some rank has
// nothing to decode; otherwise every rank only decodes. Off by default (enable_balance
// false); the defaults below are the engine's when it is turned on.
struct AttentionDpBalance {
  bool on = false;
  int64_t timeout_iters = 50;
  int64_t batching_wait_iters = 10;
};

// TensorRT-LLM's batch waiting (llm_args.py `batch_wait_timeout_iters`,
// `batch_wait_max_tokens_ratio`; PyExecutor._schedule and _waiting_requests): without
// attention DP, a step that would carry new prompts beside running decodes carries only
// the decodes until the prompts' whole lengths plus the decode tokens reach
// `max_tokens_ratio` x max_num_tokens (the token budget), or until `timeout_iters` such
// steps have been held in a row. A step without decodes never waits. Both 0 by default
// (off); with the timeout at 0 or the ratio at 0 nothing is ever held either, as in the
// engine (its count starts at 0 and 0 tokens reach a ratio of 0).
struct BatchWaiting {
  int64_t timeout_iters = 0;
  double max_tokens_ratio = 0;
};

struct EngineProfile {
  Engine engine = Engine::vllm;
  PrefillPolicy policy = PrefillPolicy::mixed;
  int64_t token_budget = 8192;  // tokens one step may carry (prompt chunks included)
  int64_t max_running = 1024;   // sequences one step may carry
  bool chunked_prefill = true;  // false: a prompt enters a step whole, or waits
  // A new prompt is cut to the step's room only when it is the step's first prompt;
  // later ones enter whole or wait for the next step (SGLang's PrefillAdder: a request
  // is truncated into a chunk only when it alone exceeds the chunk, and one that does
  // not fit the remaining input tokens of a non-empty batch ends the batch).
  bool chunk_first_prompt_only = false;
  // true: a request is admitted only when the cache can hold it to its last token,
  // and never preempted (TensorRT-LLM's GUARANTEED_NO_EVICT); false: admitted by its
  // prompt, and the last admitted is preempted (recomputed) when the cache runs out.
  bool reserve_whole_request = false;
  FutureTokenEstimate future_tokens;  // admission by SGLang's estimate of the tokens still to come
  simulate::KvMemoryRule memory;
  int64_t kv_block_tokens = 16;  // paged KV cache block (page) size
  bool prefix_caching = true;    // a request's cached prefix is not recomputed
  // Host time per step the GPU waits for (scheduling, input preparation, sampling,
  // launches not hidden by CUDA graphs or overlapped scheduling). 0 until calibrated
  // against measured serving runs (serve/engine_overheads.h).
  double step_overhead_s = 0;
  // The host prepares step k+1 while the GPU runs step k (SGLang's and TensorRT-LLM's
  // overlap schedulers, vLLM's async scheduling): a step then takes max(GPU time, host
  // time) instead of their sum, and since step k+1's batch was formed as step k started,
  // a request that arrives during step k joins step k+2 (an idle engine takes it at once).
  bool overlap_scheduling = false;
  // Client-visible time per request outside the engine's steps (HTTP, tokenization,
  // detokenization), added to its TTFT and end-to-end latency. 0 until calibrated.
  double request_overhead_s = 0;
  // And per request in flight when it arrives (its own included): TTFT grows with the
  // requests the serving frontend tokenizes and streams for, beyond what the engine's
  // steps explain. 0 until calibrated.
  double request_overhead_per_inflight_s = 0;
  // A new request reaches the engine's scheduler this many steps after it arrives
  // (the serving frontend tokenizes it and hands it over between the engine's steps),
  // each step as long as the request's own decode steps. It adds to TTFT and
  // end-to-end latency; the request's slot is not held meanwhile (a step or ten
  // against a life of hundreds of steps). A disaggregated request, handed to the decode
  // pool's engine as a new request, waits for it there too (twice in all). 0 until calibrated.
  double admission_delay_steps = 0;
  // Disaggregated serving: the time between a prompt's last prefill step and its KV
  // cache starting to reach the decode worker beyond the transfer's bytes (the router
  // choosing a decode worker, the KV connector's setup and its notification, the
  // decode engine taking the request up: Dynamo with NIXL, SGLang's mooncake / NIXL
  // transfer backends). The decode pool's engine's; 0 until calibrated on measured
  // disaggregated runs' TTFT (serve/serving_fit.h).
  double handoff_s = 0;
  // The scheduler takes in newly arrived requests only every this many decode steps
  // (SGLang's --scheduler-recv-interval, default 1: SchedulerRecvSkipper counts a decode
  // step as 1 and any other step as 1000, so it also receives right after a prefill
  // step and whenever the engine is idle).
  int64_t recv_interval_steps = 1;
  // Two micro-batches per step, one's communication under the other's compute
  // (serve/two_batch_overlap.h): SGLang --enable-two-batch-overlap and vLLM --enable-dbo,
  // both off by default (ServerArgs.enable_two_batch_overlap; vllm/config/parallel.py
  // ParallelConfig.enable_dbo). A step is split when it carries more tokens than
  // vLLM's dbo_decode_token_threshold (32) for decodes only, or its
  // dbo_prefill_token_threshold (512) with a prompt chunk; the same thresholds are
  // taken for SGLang and TensorRT-LLM (which has no such option) until measured.
  bool two_batch_overlap = false;
  int64_t tbo_decode_token_threshold = 32;
  int64_t tbo_prefill_token_threshold = 512;
  // The largest step the engine runs as a captured CUDA graph: sequences of a decode
  // step (SGLang, TensorRT-LLM: prompt steps are never captured) or tokens of any step
  // (vLLM's piecewise graphs); 0: graphs off. A larger decode step runs eagerly, its
  // kernels launched one by one. The step model prices every step as the calibration's
  // runs ran it (no decode step of theirs crossed the limit), so a simulation counts
  // such steps (runs_eagerly, ServeResult::eager_steps) and `serve` says so, rather
  // than price them unmeasured.
  int64_t cuda_graph_max_batch = 512;
  // Whether the limit counts a step's tokens (vLLM) or its decoding sequences.
  bool cuda_graph_counts_tokens = false;
  // Block-scaled FP8 GEMMs quantize their input activations (per token and 128 columns)
  // in a kernel of their own before each GEMM input (simulate::EngineKernels): vLLM's
  // W8A8BlockFp8LinearOp and SGLang's block-FP8 linear paths do; TensorRT-LLM's
  // measured runs do not show it (engine.cpp names the sources).
  bool separate_activation_quant = false;
  // TensorRT-LLM's attention-DP balancing of new prompts across ranks (a plan with
  // attention DP; the simulated replica stands for one rank, the others drawn alike).
  AttentionDpBalance adp_balance;
  // TensorRT-LLM's batch waiting: new prompts held while decodes run until enough
  // tokens gather (a plan without attention DP).
  BatchWaiting batch_waiting;
};

// Whether a decode step runs past the engine's CUDA graphs (EngineProfile::
// cuda_graph_max_batch): a decode-only step of more tokens (vLLM) or sequences (SGLang,
// TensorRT-LLM) than the limit. A step with a prompt chunk is not counted: SGLang and
// TensorRT-LLM never capture one, vLLM only up to the limit's tokens, and the measured
// runs the step model is calibrated on are full of them (their launches are a small
// part of a prompt's time); a decode step's are not.
bool runs_eagerly(const EngineProfile& e, const simulate::StepBatch& b);

// The kernels of the engine's steps the step model costs (EngineProfile's share of them).
simulate::EngineKernels engine_kernels(const EngineProfile& e);

// What the engines' defaults depend on: the GPU (memory, Blackwell's FP4 tensor
// cores) and the worker's layout and attention.
struct Deployment {
  double device_mem_bytes = 80e9;
  bool fp4_tensor_cores = false;  // Blackwell (B200, B300, GB200, GB300)
  int tp = 1, pp = 1;
  bool mla = false;
};

// The deployment of a plan of `m` on `dev`: its memory, FP4 tensor cores, layout and
// attention kind.
Deployment deployment_of(const plan::Plan& p, const model::Model& m, const topology::DeviceSpec& dev);

// The engine's defaults as a user gets them from its OpenAI-compatible server with
// no flags but the model and its parallel sizes (engine.cpp names each source).
EngineProfile default_profile(Engine e, const Deployment& d = {});

}  // namespace dayzero::serve
