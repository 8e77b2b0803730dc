#include "executor/registry.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <stdexcept>

namespace dayzero::executor {

namespace {
using model::OpKind;

// The CPU backend: one row per (op kind, variant) it runs. Attention variants
// that differ only in their parameters (window, sinks) share the kernel.
const KernelEntry kCpuKernels[] = {
    {OpKind::embedding, "gather", &embedding, &op_cost},
    {OpKind::norm, "rms", &rms_norm, &op_cost},
    {OpKind::norm, "rms_zero_centered", &rms_norm_zero_centered, &op_cost},
    {OpKind::norm, "layer_norm", &layer_norm, &op_cost},
    {OpKind::norm, "rms_across_heads", &rms_norm_given_mean, &op_cost},  // the forward all-reduces the mean over TP
    {OpKind::gemm, "f32", &linear_f32, &op_cost},
    {OpKind::gemm, "bf16", &linear_dequant, &op_cost},
    {OpKind::gemm, "f16", &linear_dequant, &op_cost},
    {OpKind::gemm, "fp8_block", &linear_dequant, &op_cost},
    {OpKind::gemm, "mxfp4", &linear_dequant, &op_cost},
    {OpKind::gemm, "int4_group", &linear_dequant, &op_cost},
    {OpKind::expert_gemm, "f32", &linear_f32, &op_cost},
    {OpKind::expert_gemm, "bf16", &linear_dequant, &op_cost},
    {OpKind::expert_gemm, "f16", &linear_dequant, &op_cost},
    {OpKind::expert_gemm, "fp8_block", &linear_dequant, &op_cost},
    {OpKind::expert_gemm, "mxfp4", &linear_dequant, &op_cost},
    {OpKind::expert_gemm, "int4_group", &linear_dequant, &op_cost},  // compressed-tensors pack-quantized (Kimi-K2.5)
    {OpKind::rope, "default", &rope_default, &op_cost},
    {OpKind::rope, "llama3", &rope_llama3, &op_cost},
    {OpKind::rope, "yarn", &rope_yarn, &op_cost},
    {OpKind::attention, "gqa", &attention, &op_cost},
    {OpKind::attention, "gqa+sliding", &attention, &op_cost},
    {OpKind::attention, "gqa+sinks", &attention, &op_cost},
    {OpKind::attention, "gqa+sliding+sinks", &attention, &op_cost},
    {OpKind::attention, "mla", &mla_attention, &mla_cost},
    {OpKind::attention, "mla+sparse_topk", &mla_attention, &sparse_mla_cost},  // keep mask from the indexer
    {OpKind::indexer, "dsa_topk", &dsa_topk, &indexer_cost},
    {OpKind::activation, "swiglu", &swiglu, &op_cost},
    {OpKind::activation, "swiglu_clamped", &swiglu_clamped, &op_cost},
    {OpKind::activation, "sigmoid_gate", &sigmoid_gate, &op_cost},
    {OpKind::linear_attention, "gated_delta_net", &gated_delta_net, &linear_attention_cost},
    {OpKind::router, "softmax_topk", &route_softmax_topk, &op_cost},
    {OpKind::router, "gpt_oss_topk_softmax", &route_topk_softmax, &op_cost},
    {OpKind::router, "sigmoid_group_topk", &route_sigmoid_group_topk, &op_cost},
    {OpKind::moe_combine, "weighted_sum", &moe_combine, &op_cost},
    // Qwen3.5: the same sum; the forward scales the shared expert by sigmoid(x w_gate) before adding it.
    {OpKind::moe_combine, "weighted_sum+shared_gate", &moe_combine, &op_cost},
};

std::vector<OpVariant> variants_of(std::span<const KernelEntry> table) {
  std::vector<OpVariant> out;
  for (const auto& e : table) out.push_back({e.kind, std::string(e.variant)});
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}
}  // namespace

std::string OpVariant::to_string() const { return std::string(model::op_kind_name(kind)) + ":" + variant; }

OpCost op_cost(const model::Op& op, const CostShape& s) {
  OpCost c;
  c.flops = s.tokens * op.flops_per_token();
  c.bytes = s.tokens * op.activation_bytes_per_token(s.act_elem_bytes);
  if (op.kind == OpKind::expert_gemm && op.experts > 0) {
    // Only the experts the tokens visit are read: at most tokens * top-k of them.
    const int64_t touched = std::min(op.experts, s.tokens * op.active_experts);
    c.bytes += op.weight_bytes / op.experts * touched;
  } else {
    c.bytes += op.weight_bytes;
  }
  if (op.kind == OpKind::attention) {
    c.flops += s.tokens * s.context * op.attn.flops_per_ctx_token(false);
    c.bytes += s.context * op.attn.kv_elems_per_token * s.act_elem_bytes;  // the cache, read once
  }
  return c;
}

OpCost mla_cost(const model::Op& op, const CostShape& s) {
  const auto& a = op.attn;
  const int64_t nope = a.qk_head_dim - a.rope_dim;
  if (!mla_absorbed(s.tokens, s.context, nope, a.rope_dim, a.kv_lora_rank, a.v_head_dim))
    return mla_expanded_cost(op, s);
  // Scores and values over the latent; each query taken into and out of the latent space by kv_b.
  OpCost c = op_cost(op, s);
  c.flops = s.tokens * s.context * a.flops_per_ctx_token(true) +
            2 * s.tokens * a.heads * (nope + a.v_head_dim) * a.kv_lora_rank;
  c.bytes += a.heads * (nope + a.v_head_dim) * a.kv_lora_rank * 4;  // kv_b, dequantized to float32
  return c;
}

OpCost mla_expanded_cost(const model::Op& op, const CostShape& s) {
  OpCost c = op_cost(op, s);
  const auto& a = op.attn;
  const int64_t nope = a.qk_head_dim - a.rope_dim;
  // kv_b_proj over the cached latent: [context, rank] x [rank, heads * (nope + v)], 2 FLOPs per MAC.
  c.flops += 2 * s.context * a.kv_lora_rank * a.heads * (nope + a.v_head_dim);
  c.bytes += s.context * a.heads * (a.qk_head_dim + a.v_head_dim) * s.act_elem_bytes;  // expanded keys, values
  return c;
}

OpCost linear_attention_cost(const model::Op& op, const CostShape& s) {
  OpCost c = op_cost(op, s);
  c.bytes += 2 * op.lin.state_elems_per_seq() * op.lin.state_elem_bytes;
  return c;
}

OpCost indexer_cost(const model::Op& op, const CostShape& s) {
  OpCost c;
  c.flops = s.tokens * s.context * op.index.flops_per_ctx_token();
  c.bytes = s.context * op.index.head_dim * s.act_elem_bytes + s.tokens * op.k * s.act_elem_bytes;
  return c;
}

OpCost sparse_mla_cost(const model::Op& op, const CostShape& s) {
  CostShape capped = s;
  if (op.attn.topk > 0) capped.context = std::min(s.context, op.attn.topk);
  return mla_cost(op, capped);
}

std::span<const KernelEntry> cpu_kernel_table() { return kCpuKernels; }

const KernelEntry& find_kernel(std::span<const KernelEntry> table, std::string_view backend, model::OpKind kind,
                               std::string_view variant) {
  for (const auto& e : table)
    if (e.kind == kind && e.variant == variant) return e;
  throw std::runtime_error("backend '" + std::string(backend) + "' has no kernel for " +
                           OpVariant{kind, std::string(variant)}.to_string());
}

bool BackendInfo::supports(const OpVariant& op) const { return std::find(ops.begin(), ops.end(), op) != ops.end(); }

namespace {
// Backends beyond "cpu", registered by the binary's main (register_backend).
std::deque<Backend>& registered() {  // a deque: references stay valid as it grows
  static std::deque<Backend> backends;
  return backends;
}
std::vector<BackendInfo>& registry() {
  static std::vector<BackendInfo> backends = {
      {"cpu", true, variants_of(cpu_kernel_table())},
      {"cuda", false, {}},  // cuda/ registers its table (register_cuda_backend) where CUDA is built
  };
  return backends;
}
}  // namespace

void register_backend(const Backend& b) {
  for (const auto& r : registered())
    if (r.name == b.name) return;
  if (b.name == "cpu") return;
  registered().push_back(b);
  for (auto& info : registry())
    if (info.name == b.name) {
      info.available = true;
      info.ops = variants_of(b.kernels);
      return;
    }
  registry().push_back({std::string(b.name), true, variants_of(b.kernels)});
}

const std::vector<BackendInfo>& backend_registry() { return registry(); }

const Backend& find_backend(std::string_view name) {
  static const Backend cpu{"cpu", cpu_kernel_table()};
  if (name == cpu.name) return cpu;
  for (const auto& b : registered())
    if (b.name == name) return b;
  std::string built;
  for (const auto& b : backend_registry())
    if (b.available) built += (built.empty() ? "" : ", ") + b.name;
  for (const auto& b : backend_registry())
    if (b.name == name)
      throw std::runtime_error("backend '" + std::string(name) + "' is not built into this dayzero (built: " + built +
                               ")");
  throw std::runtime_error("unknown backend '" + std::string(name) + "' (built: " + built + ")");
}

std::string storage_variant(const model::StorageFormat& f) {
  switch (f.kind) {
    case model::StorageKind::plain: return lower(model::dtype_name(f.dtype));
    case model::StorageKind::fp8_block: return "fp8_block";
    case model::StorageKind::fp8_tensor: return "fp8_tensor";
    case model::StorageKind::mxfp4: return "mxfp4";
    case model::StorageKind::int4_group: return "int4_group";
    case model::StorageKind::int8_channel: return "int8_channel";
    case model::StorageKind::nvfp4: return "nvfp4";
  }
  return "?";
}

std::string attention_variant(const model::AttentionShape& a) {
  if (a.kind == model::AttentionKind::mla) return a.topk > 0 ? "mla+sparse_topk" : "mla";
  std::string v = "gqa";
  if (a.window > 0) v += "+sliding";
  if (a.sinks) v += "+sinks";
  return v;
}

std::string router_variant(const model::ModelConfig& c) {
  if (c.family == model::Family::gpt_oss) return "gpt_oss_topk_softmax";
  const auto& m = c.moe;
  if (m.scoring_func == "sigmoid" && m.topk_method == "noaux_tc") return "sigmoid_group_topk";
  if (m.scoring_func == "softmax" && m.topk_method == "greedy") return "softmax_topk";
  return m.scoring_func + "_" + m.topk_method;  // e.g. DeepSeek-V2 "softmax_group_limited_greedy": no kernel yet
}

OpVariant op_variant(const model::Model& m, const model::Op& op) {
  switch (op.kind) {
    case OpKind::embedding: return {op.kind, "gather"};
    case OpKind::norm:
      if (op.weights.size() > 1) return {op.kind, "layer_norm"};  // with a bias: the indexer's k_norm
      if (m.config.qk_norm_whole && (op.name == "q_norm" || op.name == "k_norm"))
        return {op.kind, "rms_across_heads"};  // MiniMax-M2's q_norm / k_norm: one norm over all (TP-split) heads
      if (m.config.family == model::Family::qwen3_5_moe) return {op.kind, "rms_zero_centered"};
      return {op.kind, "rms"};
    case OpKind::gemm:
    case OpKind::expert_gemm: {
      const model::Weight* w = op.weights.empty() ? nullptr : m.find_weight(op.weights.front());
      if (!w)
        throw std::runtime_error("op '" + op.name + "': weight '" + (op.weights.empty() ? "" : op.weights.front()) +
                                 "' is not in the model's weight list");
      return {op.kind, storage_variant(w->stored)};
    }
    case OpKind::rope: return {op.kind, m.config.rope.type};
    case OpKind::attention: return {op.kind, attention_variant(op.attn)};
    case OpKind::activation:
      if (op.name == "attn_output_gate") return {op.kind, "sigmoid_gate"};
      return {op.kind,
              m.config.family == model::Family::gpt_oss && op.active_experts > 0 ? "swiglu_clamped" : "swiglu"};
    case OpKind::router: return {op.kind, router_variant(m.config)};
    case OpKind::moe_combine:
      return {op.kind, m.config.moe.shared_expert_gate ? "weighted_sum+shared_gate" : "weighted_sum"};
    case OpKind::linear_attention: return {op.kind, "gated_delta_net"};
    case OpKind::indexer: return {op.kind, "dsa_topk"};
  }
  return {op.kind, "?"};
}

std::vector<OpVariant> required_ops(const model::Model& m) {
  std::vector<OpVariant> out;
  auto add = [&](const model::Op& op) {
    OpVariant v = op_variant(m, op);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  };
  for (const auto& op : m.pre_ops) add(op);
  for (const auto& l : m.layers)
    for (const auto& op : l.ops) add(op);
  for (const auto& op : m.post_ops) add(op);
  std::stable_sort(out.begin(), out.end(), [](const OpVariant& a, const OpVariant& b) { return a.kind < b.kind; });
  return out;
}

std::vector<OpCoverage> op_coverage(const model::Model& m) {
  std::vector<OpCoverage> out;
  for (auto& op : required_ops(m)) {
    OpCoverage c{op, {}};
    for (const auto& b : backend_registry())
      if (b.supports(op)) c.backends.push_back(b.name);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace dayzero::executor
