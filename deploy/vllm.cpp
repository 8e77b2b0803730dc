// vLLM (`vllm serve`): a plan's workers as vLLM commands, and a vLLM command line as a
// plan. Flag names and kinds are checked against the pinned argument list
// (scenarios/engines/vllm-*.json); what each means, from vLLM's own documentation of
// its engine arguments and of its parallelism and scaling guide.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "deploy/worker.h"

namespace dayzero::deploy::detail {

namespace {

// Every rank of a stage runs the experts: tensor-parallel over them by default, or
// expert-parallel with --enable-expert-parallel (vLLM's FusedMoE flattens tp x dp
// into one group either way). Other splits have no flag.
bool expert_parallel(const Context& ctx, const Worker& w) {
  const plan::Plan& p = w.plan;
  const int rps = p.ranks_per_stage();
  if (!w.moe || rps == 1) return false;
  if (p.moe.tp == rps && p.moe.ep == 1 && p.moe.dp == 1) return false;
  if (p.moe.ep == rps && p.moe.tp == 1 && p.moe.dp == 1) return true;
  throw Unexpressible(ctx.engine, "moe",
                      "tp " + std::to_string(p.moe.tp) + " x ep " + std::to_string(p.moe.ep) + " x dp " +
                          std::to_string(p.moe.dp) + ": vLLM runs a stage's experts tensor-parallel over all " +
                          std::to_string(rps) +
                          " of its ranks, or expert-parallel over them "
                          "(--enable-expert-parallel); a mixed or replicated expert layout has no flag");
}

std::string speculative_json(const Context& ctx, const plan::SpeculativeDecoding& s) {
  nlohmann::json j;
  if (s.method == plan::SpecMethod::mtp) {
    j["method"] = "mtp";
  } else {
    if (ctx.options->draft_model_id.empty())
      throw Unexpressible(ctx.engine, "speculative.method",
                          "an EAGLE draft is a model of its own: export with --draft-model-id NAME");
    j["method"] = "eagle";
    j["model"] = ctx.options->draft_model_id;
  }
  j["num_speculative_tokens"] = s.draft_tokens;
  return j.dump();
}

// VLLM_PP_LAYER_PARTITION's value for uneven stages; "" for vLLM's own even split.
std::string layer_partition(const plan::Plan& p, const model::Model& m) {
  if (p.stage_layers.empty()) return "";
  plan::Plan even = p;
  even.stage_layers.clear();
  const auto layers = p.layers_per_stage(m.config.num_layers);
  if (layers == even.layers_per_stage(m.config.num_layers)) return "";
  std::string s;
  for (int64_t n : layers) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

// The flags every node of a worker shares.
std::vector<Flag> vllm_worker_flags(const Context& ctx, const Worker& w, const std::string& quant) {
  const plan::Plan& p = w.plan;
  std::vector<Flag> f;
  add(f, "--tensor-parallel-size", p.attention.tp);
  if (p.pp > 1) add(f, "--pipeline-parallel-size", p.pp);
  if (p.attention.dp > 1) add(f, "--data-parallel-size", p.attention.dp);
  if (expert_parallel(ctx, w)) add_switch(f, "--enable-expert-parallel");
  if (p.moe.redundant_experts > 0) {  // EPLB: vLLM's EPLBConfig.num_redundant_experts
    add_switch(f, "--enable-eplb");
    add(f, "--eplb-config", "{\"num_redundant_experts\": " + std::to_string(p.moe.redundant_experts) + "}");
  }
  add(f, "--max-num-seqs", w.max_running);
  add(f, "--max-model-len", w.max_model_len);
  add(f, "--max-num-batched-tokens", w.token_budget);
  add(f, "--gpu-memory-utilization", number(w.memory_fraction));
  add(f, "--block-size", p.kv_block_tokens);
  add(f, "--kv-cache-dtype", p.dtypes.kv_cache == plan::KvDtype::fp8 ? "fp8" : "auto");
  if (!quant.empty()) add(f, "--quantization", quant);
  if (p.speculative.on()) add(f, "--speculative-config", speculative_json(ctx, p.speculative));
  const plan::EngineSettings& s = *ctx.settings;
  if (s.two_batch_overlap && *s.two_batch_overlap) add_switch(f, "--enable-dbo");
  if (s.prefix_caching) add_switch(f, *s.prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching");
  if (s.chunked_prefill) add_switch(f, *s.chunked_prefill ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill");
  if (s.overlap_scheduling && *s.overlap_scheduling) add_switch(f, "--async-scheduling");
  if (s.cuda_graph_max_batch) {  // 0: graphs off
    if (*s.cuda_graph_max_batch == 0) add_switch(f, "--enforce-eager");
    else add(f, "--max-cudagraph-capture-size", *s.cuda_graph_max_batch);
  }
  if (w.role != "serve")  // a pool of a disaggregated deployment
    add(f, "--kv-transfer-config", R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})");
  return f;
}

}  // namespace

void emit_vllm(const Context& ctx, const std::vector<Worker>& workers, Launch& out) {
  const std::string quant = weight_conversion(ctx, true);
  const int g = ctx.gpus_per_node();
  for (const Worker& w : workers) {
    const plan::Plan& p = w.plan;
    const std::vector<Flag> shared = vllm_worker_flags(ctx, w, quant);
    const std::string partition = layer_partition(p, *ctx.model);
    const int stage_ranks = p.attention.tp * p.pp;  // one DP rank's GPUs
    for (int k = 0; k < w.nodes; ++k) {
      Command c;
      c.node = w.first_node + k;
      c.host = ctx.host(c.node);
      c.role = w.role;
      c.program = {"vllm", "serve", ctx.model_id};
      c.flags = shared;
      if (const auto env = visible_devices(w)) c.env.push_back(*env);
      if (!partition.empty()) c.env.push_back("VLLM_PP_LAYER_PARTITION=" + partition);
      if (w.nodes > 1) {
        if (p.attention.dp > 1 && stage_ranks <= g && g % stage_ranks == 0) {
          // Data parallel over nodes: each node runs its share of the DP ranks; the
          // first node serves the API (vLLM's "data parallel deployment" guide).
          const int local = g / stage_ranks;
          add(c.flags, "--data-parallel-size-local", local);
          add(c.flags, "--data-parallel-address", ctx.host(w.first_node));
          add(c.flags, "--data-parallel-rpc-port", 13345);
          if (k > 0) {
            add_switch(c.flags, "--headless");
            add(c.flags, "--data-parallel-start-rank", int64_t{k} * local);
          }
        } else if (p.attention.dp == 1) {
          // One engine over several nodes (tensor / pipeline parallel across them).
          add(c.flags, "--nnodes", w.nodes);
          add(c.flags, "--node-rank", k);
          add(c.flags, "--master-addr", ctx.host(w.first_node));
          add(c.flags, "--master-port", 29501);
          if (k > 0) add_switch(c.flags, "--headless");
        } else {
          throw Unexpressible(ctx.engine, "attention",
                              "data parallel with a DP rank of " + std::to_string(stage_ranks) +
                                  " GPUs spanning nodes of " + std::to_string(g) +
                                  ": vLLM places whole DP ranks on a node");
        }
      }
      if (k == 0) add(c.flags, "--port", w.port);
      c.comment = (w.role == "serve" ? std::string("the engine") : w.role + " worker " + std::to_string(w.index)) +
                  (w.nodes > 1 ? ", node " + std::to_string(k + 1) + " of " + std::to_string(w.nodes) : "") +
                  (k == 0 ? ": API on port " + std::to_string(w.port) : " (headless)");
      out.commands.push_back(std::move(c));
    }
  }
  if (ctx.plan->disaggregated.on())
    out.notes.push_back(
        "vLLM moves the KV cache with NIXL (--kv-transfer-config); requests reach the pools through a "
        "prefill/decode proxy that vLLM does not start (its examples/online_serving/disaggregated_serving "
        "proxy, llm-d or NVIDIA Dynamo): point it at the prefill and the decode workers' ports above");
  if (!quant.empty())
    out.notes.push_back(
        "--quantization fp8 converts the 16-bit checkpoint at load (per-tensor dynamic FP8 scales; "
        "the plan costs 128x128 block scales, the same bytes within 0.01 %)");
}

void read_vllm(const ParsedArgs& a, const EngineArgs& args, Reading& r) {
  Imported& out = *r.out;
  plan::Plan& p = out.plan;
  const int tp = static_cast<int>(a.get_int(args, "--tensor-parallel-size", 1));
  const int pp = static_cast<int>(a.get_int(args, "--pipeline-parallel-size", 1));
  const int dp = static_cast<int>(a.get_int(args, "--data-parallel-size", 1));
  p.pp = pp;
  p.attention = {tp, dp};
  const int rps = tp * dp;
  if (r.moe)
    p.moe = a.get_switch(args, "--enable-expert-parallel") ? plan::MoeLayout{1, rps, 1} : plan::MoeLayout{rps, 1, 1};
  else p.moe = {1, 1, rps};
  if (const std::string* v = a.get(args, "--max-num-seqs")) {
    out.settings.max_running = std::stoll(*v);
    p.workload.batch = *out.settings.max_running * dp * pp;
  }
  if (const std::string* v = a.get(args, "--max-num-batched-tokens")) {
    out.settings.token_budget = std::stoll(*v);
    p.prefill_chunk_tokens = *out.settings.token_budget;
  }
  if (const std::string* v = a.get(args, "--gpu-memory-utilization")) out.settings.memory_fraction = std::stod(*v);
  if (const std::string* v = a.get(args, "--block-size")) p.kv_block_tokens = std::stoll(*v);
  if (const std::string* v = a.get(args, "--kv-cache-dtype"))
    p.dtypes.kv_cache = v->rfind("fp8", 0) == 0 ? plan::KvDtype::fp8 : plan::KvDtype::bf16;
  if (const std::string* v = a.get(args, "--quantization"); v && *v == "fp8")
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = p.dtypes.embedding = model::WeightPrecision::fp8;
  if (const std::string* v = a.get(args, "--speculative-config")) {
    const nlohmann::json j = core::parse_json_text(*v, "--speculative-config");
    const std::string method = j.value("method", "");
    if (method == "mtp" || method == "deepseek_mtp") p.speculative.method = plan::SpecMethod::mtp;
    else if (method == "eagle" || method == "eagle3") p.speculative.method = plan::SpecMethod::eagle;
    else
      throw std::invalid_argument("--speculative-config: method \"" + method +
                                  "\" is not one DayZero models (mtp, eagle)");
    p.speculative.draft_tokens = j.value("num_speculative_tokens", 1);
  }
  if (a.get_switch(args, "--enable-eplb")) {  // redundant slots: EPLBConfig.num_redundant_experts (default 0)
    if (const std::string* v = a.get(args, "--eplb-config"))
      p.moe.redundant_experts = core::parse_json_text(*v, "--eplb-config").value("num_redundant_experts", 0);
  }
  if (a.get_switch(args, "--enable-dbo")) out.settings.two_batch_overlap = true;
  if (const auto b = a.get_bool(args, "--enable-prefix-caching")) out.settings.prefix_caching = *b;
  if (const auto b = a.get_bool(args, "--enable-chunked-prefill")) out.settings.chunked_prefill = *b;
  if (a.get_switch(args, "--async-scheduling")) out.settings.overlap_scheduling = true;
  if (a.get_switch(args, "--enforce-eager")) out.settings.cuda_graph_max_batch = 0;
  else if (const std::string* v = a.get(args, "--max-cudagraph-capture-size"))
    out.settings.cuda_graph_max_batch = std::stoll(*v);
  r.understood = {"--tensor-parallel-size",
                  "--pipeline-parallel-size",
                  "--data-parallel-size",
                  "--enable-expert-parallel",
                  "--max-num-seqs",
                  "--max-num-batched-tokens",
                  "--gpu-memory-utilization",
                  "--block-size",
                  "--kv-cache-dtype",
                  "--quantization",
                  "--speculative-config",
                  "--enable-dbo",
                  "--enable-eplb",
                  "--eplb-config",
                  "--enable-prefix-caching",
                  "--no-enable-prefix-caching",
                  "--enable-chunked-prefill",
                  "--no-enable-chunked-prefill",
                  "--async-scheduling",
                  "--enforce-eager",
                  "--max-cudagraph-capture-size",
                  "--max-model-len",
                  "--data-parallel-size-local",
                  "--data-parallel-address",
                  "--data-parallel-rpc-port",
                  "--data-parallel-start-rank",
                  "--headless",
                  "--nnodes",
                  "--node-rank",
                  "--master-addr",
                  "--master-port",
                  "--port",
                  "--kv-transfer-config",
                  "--model"};
  r.max_model_len = a.get_int(args, "--max-model-len", 0);
}

}  // namespace dayzero::deploy::detail
