#pragma once
// The Plan: how a model is laid out on a cluster and run. search writes it,
// simulate evaluates it, the executor runs it, the GUI shows it. A plain value
// type with JSON beside it (plan_json.h); rank arithmetic lives here.
//
// Ranks are numbered with TP innermost, then DP, then PP outermost (Megatron's
// order). Attention layers split a stage's ranks as tp x dp; MoE layers split the
// same ranks as moe_tp x ep x moe_dp (e.g. attention DP=16 with experts EP=16).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"
#include "plan/speculative.h"

namespace dayzero::plan {

inline constexpr int kPlanSchemaVersion = 1;

struct AttentionLayout {
  int tp = 1;  // tensor parallel: heads split
  int dp = 1;  // data parallel replicas inside a stage
};

struct MoeLayout {
  int tp = 1;  // each expert's FFN width split
  int ep = 1;  // experts spread over ranks
  int dp = 1;  // replicas of the expert set
  // Extra expert slots per layer holding replicas of the hottest experts, spread
  // redundant_experts / ep per EP rank, with the experts placed to balance the ranks'
  // load (expert-parallel load balancing: DeepSeek-V3 report sec. 3.4 "each GPU hosts
  // one redundant expert"; vLLM --enable-eplb, SGLang --ep-num-redundant-experts,
  // TensorRT-LLM's Wide-EP moe_config.load_balancer.num_slots = experts + this).
  int redundant_experts = 0;
};

// The KV cache's element type, and what flows between ops and over links.
// fp32 is the executor's full-precision reference (a CPU run's KV cache, the CPU
// backend's activations): a plan may name it, but no engine serves it, so the
// search uses kAllKvDtypes / kAllActivationDtypes, the engines' own, and the
// exports refuse it.
enum class KvDtype { bf16, fp8, fp32 };
enum class ActivationDtype { bf16, fp16, fp32 };
inline constexpr KvDtype kAllKvDtypes[] = {KvDtype::bf16, KvDtype::fp8};
inline constexpr KvDtype kPlanKvDtypes[] = {KvDtype::bf16, KvDtype::fp8, KvDtype::fp32};
inline constexpr ActivationDtype kAllActivationDtypes[] = {ActivationDtype::bf16, ActivationDtype::fp16};
inline constexpr ActivationDtype kPlanActivationDtypes[] = {ActivationDtype::bf16, ActivationDtype::fp16,
                                                            ActivationDtype::fp32};
std::string_view kv_dtype_name(KvDtype d);  // "bf16" | "fp8" | "fp32"
std::optional<KvDtype> parse_kv_dtype(std::string_view s);
int64_t kv_elem_bytes(KvDtype d);
std::string_view activation_dtype_name(ActivationDtype d);  // "bf16" | "fp16" | "fp32"
std::optional<ActivationDtype> parse_activation_dtype(std::string_view s);
int64_t activation_elem_bytes(ActivationDtype d);

// Weight precisions, per part (model::WeightPrecision: bf16, fp8, int8 (W8A8),
// int8_w8a16, int4 (W4A16), nvfp4 (W4A4), or checkpoint = as stored), and the KV
// cache and activation dtypes. Whether the cluster's device can run them (int8 and
// nvfp4 need its INT8 / FP4 tensor cores) is simulate::validate_plan_precisions.
struct PlanDtypes {
  model::WeightPrecision attention = model::WeightPrecision::checkpoint;
  model::WeightPrecision dense_mlp = model::WeightPrecision::checkpoint;  // dense FFN layers and shared experts
  model::WeightPrecision experts = model::WeightPrecision::checkpoint;    // routed experts
  model::WeightPrecision embedding = model::WeightPrecision::checkpoint;  // embedding table and LM head
  KvDtype kv_cache = KvDtype::bf16;
  ActivationDtype activations = ActivationDtype::bf16;
};

struct OffloadPolicy {
  // Routed experts per MoE layer kept in device memory: the hottest ones under the
  // routing distribution. -1 = all. The rest live in host memory and are fetched
  // over the host link when routed to.
  int64_t resident_experts = -1;
};

// Upper bounds on a workload, checked where a plan or a scenario is read, so that token
// and sequence counts stay far inside 64 bits before the memory model multiplies them
// (check_workload_sizes then checks the products themselves).
// Tokens of a prompt or of an output (and a KV block or a prefill chunk): 100x the
// longest published context window, Llama 4 Scout's 10M tokens.
inline constexpr int64_t kMaxSequenceTokens = int64_t{1} << 30;
// Concurrent sequences: 256 (vLLM's default max_num_seqs) on each of 2^18 devices, more
// than the largest cluster holds.
inline constexpr int64_t kMaxBatch = int64_t{1} << 26;

struct Workload {
  int64_t batch = 1;           // concurrent sequences over the whole plan
  int64_t input_len = 1024;    // prompt tokens
  int64_t output_len = 256;    // generated tokens
  double prefix_hit_rate = 0;  // share of prompt tokens served from the prefix cache
  // Routing skew: expert popularity p(k-th hottest) ~ 1 / k^s (0 = uniform), or
  // measured counts per expert (taking precedence when given).
  double routing_zipf_s = 0;
  std::vector<double> expert_counts;
  uint64_t routing_seed = 0;  // which expert ids are hot (a fixed permutation)
};

// One prefill worker's layout in a disaggregated deployment. Its precisions, KV
// blocks, offload and workload lengths are the plan's own; its batch is the prompts
// one worker holds at once.
struct WorkerLayout {
  int pp = 1;
  AttentionLayout attention;
  MoeLayout moe;
  int64_t batch = 1;
};

// Disaggregated serving (serve/disaggregated.h): `prefill_workers` workers of the
// `prefill` layout compute the prompts, `decode_workers` workers of the plan's own
// layout and batch decode, and each request's KV cache moves once between them.
// Prefill workers take the cluster's first devices, decode workers the next ones.
// No prefill workers: one pool serves both (the plan alone).
struct Disaggregation {
  int prefill_workers = 0;
  int decode_workers = 0;
  WorkerLayout prefill;
  bool on() const { return prefill_workers > 0; }
};

// Ranks first, first + step, ... (count of them): one of a rank's groups.
struct RankRange {
  int first = 0, step = 1, count = 1;
  int operator[](int i) const { return first + i * step; }
  std::vector<int> ranks() const;
};

struct Plan {
  int schema_version = kPlanSchemaVersion;
  std::string model;    // what it was made for (informational): path or name
  std::string cluster;  // cluster name
  int pp = 1;
  AttentionLayout attention;
  MoeLayout moe;
  std::vector<uint32_t> devices;      // rank -> device id; empty = ranks 0..N-1 on devices 0..N-1
  std::vector<int64_t> stage_layers;  // decoder layers per PP stage; empty = even split
  PlanDtypes dtypes;
  int64_t kv_block_tokens = 16;         // paged KV cache block (vLLM's default block size)
  int64_t prefill_chunk_tokens = 8192;  // largest prefill step per replica (chunked prefill)
  OffloadPolicy offload;
  Workload workload;
  double comm_overlap = 0;          // share of communication hidden behind compute
  SpeculativeDecoding speculative;  // off unless a method is set
  Disaggregation disaggregated;     // off unless prefill workers are set

  int ranks_per_stage() const { return attention.tp * attention.dp; }
  // One worker's ranks (a disaggregated plan's decode worker).
  int world_size() const { return pp * ranks_per_stage(); }
  // Devices the whole deployment takes: world_size(), or both pools' workers.
  int64_t devices_used() const;
  // A disaggregated plan's workers as plans of their own: a prefill worker (the
  // prefill layout and batch, no speculative decoding: drafting happens on the decode
  // side) and a decode worker (the plan without its pools). Not disaggregated: the
  // plan itself, both.
  Plan prefill_worker() const;
  Plan decode_worker() const;

  // Rank arithmetic (TP innermost, then DP, then PP).
  int stage_of(int rank) const { return rank / ranks_per_stage(); }
  int attn_tp_index(int rank) const { return rank % attention.tp; }
  int attn_dp_index(int rank) const { return (rank % ranks_per_stage()) / attention.tp; }
  int moe_tp_index(int rank) const { return (rank % ranks_per_stage()) % moe.tp; }
  int ep_index(int rank) const { return ((rank % ranks_per_stage()) / moe.tp) % moe.ep; }
  int moe_dp_index(int rank) const { return (rank % ranks_per_stage()) / (moe.tp * moe.ep); }
  uint32_t device_of(int rank) const { return devices.empty() ? static_cast<uint32_t>(rank) : devices[rank]; }

  // The ranks of `rank`'s groups, in group order: as ranges (evenly spaced), and listed.
  RankRange attn_tp_ranks(int rank) const;
  RankRange ep_ranks(int rank) const;
  RankRange moe_tp_ranks(int rank) const;
  std::vector<int> attn_tp_group(int rank) const { return attn_tp_ranks(rank).ranks(); }
  std::vector<int> ep_group(int rank) const { return ep_ranks(rank).ranks(); }
  std::vector<int> moe_tp_group(int rank) const { return moe_tp_ranks(rank).ranks(); }

  // Layers of each stage (stage_layers, or an even split with the remainder on the
  // first stages) and the first layer of stage s.
  std::vector<int64_t> layers_per_stage(int64_t num_layers) const;
};

}  // namespace dayzero::plan
