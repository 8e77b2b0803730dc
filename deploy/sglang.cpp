// SGLang (`python3 -m sglang.launch_server`): a plan's workers as SGLang commands, and
// an SGLang command line as a plan. Flag names and kinds are checked against the
// pinned argument list (scenarios/engines/sglang-*.json); their meaning, from
// SGLang's server arguments documentation.
#include "deploy/worker.h"

namespace dayzero::deploy::detail {

namespace {

// SGLang's --tp-size counts every GPU of a stage; --dp-size with
// --enable-dp-attention splits them into attention replicas; experts are split
// --ep-size ways and tensor-parallel over the rest (moe_tp = tp_size / ep_size).
// Without DP attention, --dp-size starts that many independent replicas of
// --tp-size GPUs each: a dense model's data parallelism.
struct SglangLayout {
  int tp_size = 1, dp_size = 1, ep_size = 1;
  bool dp_attention = false;
};

SglangLayout layout_of(const Context& ctx, const Worker& w) {
  const plan::Plan& p = w.plan;
  SglangLayout l;
  if (!w.moe) {
    l.tp_size = p.attention.tp;
    l.dp_size = p.attention.dp;
    return l;
  }
  const int rps = p.ranks_per_stage();
  l.tp_size = rps;
  l.dp_size = p.attention.dp;
  l.dp_attention = p.attention.dp > 1;
  if (p.moe.dp != 1 || p.moe.tp * p.moe.ep != rps)
    throw Unexpressible(ctx.engine, "moe",
                        "dp " + std::to_string(p.moe.dp) +
                            ": SGLang splits a stage's experts over all its ranks (--ep-size ways, tensor-parallel "
                            "over the rest); replicated expert groups have no flag");
  l.ep_size = p.moe.ep;
  return l;
}

void speculative_flags(const Context& ctx, const plan::SpeculativeDecoding& s, std::vector<Flag>& f) {
  // SGLang runs MTP drafts as its EAGLE algorithm over the model's own next-token
  // layer (its DeepSeek-V3 recipe: EAGLE, num-steps N, topk 1, N + 1 draft tokens);
  // an EAGLE head is a draft model given by path.
  add(f, "--speculative-algorithm", "EAGLE");
  if (s.method == plan::SpecMethod::eagle) {
    if (ctx.options->draft_model_id.empty())
      throw Unexpressible(ctx.engine, "speculative.method",
                          "an EAGLE draft is a model of its own: export with --draft-model-id NAME");
    add(f, "--speculative-draft-model-path", ctx.options->draft_model_id);
  }
  add(f, "--speculative-num-steps", s.draft_tokens);
  add(f, "--speculative-eagle-topk", 1);
  add(f, "--speculative-num-draft-tokens", s.draft_tokens + 1);
}

std::vector<Flag> sglang_worker_flags(const Context& ctx, const Worker& w, const std::string& quant) {
  const plan::Plan& p = w.plan;
  const SglangLayout l = layout_of(ctx, w);
  std::vector<Flag> f;
  add(f, "--model-path", ctx.model_id);
  add(f, "--tp-size", l.tp_size);
  if (l.dp_size > 1) add(f, "--dp-size", l.dp_size);
  if (l.dp_attention) add_switch(f, "--enable-dp-attention");
  if (l.ep_size > 1) add(f, "--ep-size", l.ep_size);
  if (p.moe.redundant_experts > 0) {
    add_switch(f, "--enable-eplb");
    add(f, "--ep-num-redundant-experts", p.moe.redundant_experts);
  }
  if (p.pp > 1) add(f, "--pp-size", p.pp);
  // With DP attention the scheduler of each attention replica takes
  // max_running_requests / dp_size (SGLang's TpModelWorker).
  add(f, "--max-running-requests", w.max_running * (l.dp_attention ? l.dp_size : 1));
  add(f, "--context-length", w.max_model_len);
  const plan::EngineSettings& s = *ctx.settings;
  add(f, "--chunked-prefill-size", s.chunked_prefill && !*s.chunked_prefill ? -1 : w.token_budget);
  add(f, "--mem-fraction-static", number(w.memory_fraction));
  add(f, "--page-size", p.kv_block_tokens);
  add(f, "--kv-cache-dtype", p.dtypes.kv_cache == plan::KvDtype::fp8 ? "fp8_e4m3" : "auto");
  if (!quant.empty()) add(f, "--quantization", quant);
  if (p.speculative.on()) speculative_flags(ctx, p.speculative, f);
  if (s.two_batch_overlap && *s.two_batch_overlap) add_switch(f, "--enable-two-batch-overlap");
  if (s.prefix_caching && !*s.prefix_caching) add_switch(f, "--disable-radix-cache");
  if (s.overlap_scheduling && !*s.overlap_scheduling) add_switch(f, "--disable-overlap-schedule");
  if (s.policy && *s.policy == plan::PrefillPolicy::mixed) add_switch(f, "--enable-mixed-chunk");
  if (s.recv_interval_steps) add(f, "--scheduler-recv-interval", *s.recv_interval_steps);
  if (s.cuda_graph_max_batch) {  // 0: graphs off
    if (*s.cuda_graph_max_batch == 0) add_switch(f, "--disable-cuda-graph");
    else add(f, "--cuda-graph-max-bs", *s.cuda_graph_max_batch);
  }
  if (w.role != "serve") {
    add(f, "--disaggregation-mode", w.role);
    add(f, "--disaggregation-transfer-backend", "mooncake");
  }
  return f;
}

}  // namespace

void emit_sglang(const Context& ctx, const std::vector<Worker>& workers, Launch& out) {
  const std::string quant = weight_conversion(ctx, true);
  for (const Worker& w : workers) {
    if (!w.plan.stage_layers.empty())
      throw Unexpressible(ctx.engine, "stage_layers", "SGLang splits the layers evenly over --pp-size stages");
    const std::vector<Flag> shared = sglang_worker_flags(ctx, w, quant);
    for (int k = 0; k < w.nodes; ++k) {
      Command c;
      c.node = w.first_node + k;
      c.host = ctx.host(c.node);
      c.role = w.role;
      c.program = {"python3", "-m", "sglang.launch_server"};
      c.flags = shared;
      if (!w.local_gpus.empty()) add(c.flags, "--base-gpu-id", w.local_gpus.front());
      if (w.nodes > 1) {
        add(c.flags, "--nnodes", w.nodes);
        add(c.flags, "--node-rank", k);
        add(c.flags, "--dist-init-addr", ctx.host(w.first_node) + ":" + std::to_string(5000 + w.port - 8000));
      }
      add(c.flags, "--host", "0.0.0.0");  // SGLang listens on 127.0.0.1 by default
      add(c.flags, "--port", w.port);
      c.comment = (w.role == "serve" ? std::string("the server") : w.role + " worker " + std::to_string(w.index)) +
                  (w.nodes > 1 ? ", node " + std::to_string(k + 1) + " of " + std::to_string(w.nodes) : "");
      out.commands.push_back(std::move(c));
    }
  }
  if (ctx.plan->disaggregated.on())
    out.notes.push_back(
        "SGLang moves the KV cache with Mooncake (--disaggregation-transfer-backend; RDMA NICs needed across "
        "nodes); requests reach the pools through SGLang's router in PD mode (python3 -m "
        "sglang_router.launch_router --pd-disaggregation --prefill URL --decode URL, a separate package whose "
        "flags DayZero does not check)");
}

namespace {

// The layout flags (as SglangLayout reads them) as the plan's pp, attention and experts
// layouts; returns the flags as given, which --max-running-requests is read against.
SglangLayout read_layout(const ParsedArgs& a, const EngineArgs& args, Reading& r) {
  plan::Plan& p = r.out->plan;
  SglangLayout l;
  l.tp_size = static_cast<int>(a.get_int(args, "--tp-size", 1));
  l.dp_size = static_cast<int>(a.get_int(args, "--dp-size", 1));
  l.ep_size = static_cast<int>(a.get_int(args, "--ep-size", 1));
  l.dp_attention = a.get_switch(args, "--enable-dp-attention");
  p.pp = static_cast<int>(a.get_int(args, "--pp-size", 1));
  if (l.dp_attention) {
    if (l.tp_size % l.dp_size != 0)
      throw std::invalid_argument("--dp-size " + std::to_string(l.dp_size) + " does not divide --tp-size " +
                                  std::to_string(l.tp_size));
    p.attention = {l.tp_size / l.dp_size, l.dp_size};
  } else {
    p.attention = {l.tp_size, l.dp_size};
  }
  const int rps = p.ranks_per_stage();
  if (l.ep_size < 1 || rps % l.ep_size != 0)
    throw std::invalid_argument("--ep-size " + std::to_string(l.ep_size) + " does not divide the " +
                                std::to_string(rps) + " GPUs of a stage");
  p.moe = r.moe ? plan::MoeLayout{rps / l.ep_size, l.ep_size, 1} : plan::MoeLayout{1, 1, rps};
  return l;
}

// The batch, the scheduler's token budget, memory and KV pages, and the precisions.
void read_capacity(const ParsedArgs& a, const EngineArgs& args, const SglangLayout& l, Imported& out) {
  plan::Plan& p = out.plan;
  if (const std::string* v = a.get(args, "--max-running-requests")) {
    const int64_t total = std::stoll(*v);
    out.settings.max_running = l.dp_attention ? total / l.dp_size : total;
    p.workload.batch = *out.settings.max_running * p.attention.dp * p.pp;
  }
  if (const std::string* v = a.get(args, "--chunked-prefill-size")) {
    const int64_t n = std::stoll(*v);
    if (n <= 0) out.settings.chunked_prefill = false;
    else out.settings.token_budget = p.prefill_chunk_tokens = n;
  }
  if (const std::string* v = a.get(args, "--mem-fraction-static")) out.settings.memory_fraction = std::stod(*v);
  if (const std::string* v = a.get(args, "--page-size")) p.kv_block_tokens = std::stoll(*v);
  if (const std::string* v = a.get(args, "--kv-cache-dtype"))
    p.dtypes.kv_cache = v->rfind("fp8", 0) == 0 ? plan::KvDtype::fp8 : plan::KvDtype::bf16;
  if (const std::string* v = a.get(args, "--quantization"); v && *v == "fp8")
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = p.dtypes.embedding = model::WeightPrecision::fp8;
}

// Speculative decoding, expert load balancing and the scheduler's switches.
void read_features(const ParsedArgs& a, const EngineArgs& args, Imported& out) {
  plan::Plan& p = out.plan;
  if (const std::string* v = a.get(args, "--speculative-algorithm")) {
    if (*v != "EAGLE" && *v != "EAGLE3" && *v != "NEXTN")
      throw std::invalid_argument("--speculative-algorithm " + *v +
                                  " is not one DayZero models (EAGLE, EAGLE3, NEXTN)");
    p.speculative.method =
        a.get(args, "--speculative-draft-model-path") ? plan::SpecMethod::eagle : plan::SpecMethod::mtp;
    p.speculative.draft_tokens = static_cast<int>(a.get_int(args, "--speculative-num-steps", 1));
  }
  if (a.get_switch(args, "--enable-eplb"))  // redundant slots: --ep-num-redundant-experts (default 0)
    p.moe.redundant_experts = static_cast<int>(a.get_int(args, "--ep-num-redundant-experts", 0));
  if (a.get_switch(args, "--enable-two-batch-overlap")) out.settings.two_batch_overlap = true;
  if (a.get_switch(args, "--disable-radix-cache")) out.settings.prefix_caching = false;
  if (a.get_switch(args, "--disable-overlap-schedule")) out.settings.overlap_scheduling = false;
  if (a.get_switch(args, "--enable-mixed-chunk")) out.settings.policy = plan::PrefillPolicy::mixed;
  if (const std::string* v = a.get(args, "--scheduler-recv-interval"))
    out.settings.recv_interval_steps = std::stoll(*v);
  if (a.get_switch(args, "--disable-cuda-graph")) out.settings.cuda_graph_max_batch = 0;
  else if (const std::string* v = a.get(args, "--cuda-graph-max-bs"))
    out.settings.cuda_graph_max_batch = std::stoll(*v);
}

// The flags an import understands (every other is kept as the engine's): those read
// above, and those emit_sglang writes for placement and transport.
std::vector<std::string> understood_flags() {
  return {"--model-path",
          "--tp-size",
          "--dp-size",
          "--enable-dp-attention",
          "--ep-size",
          "--pp-size",
          "--max-running-requests",
          "--context-length",
          "--chunked-prefill-size",
          "--mem-fraction-static",
          "--page-size",
          "--kv-cache-dtype",
          "--quantization",
          "--speculative-algorithm",
          "--speculative-draft-model-path",
          "--speculative-num-steps",
          "--speculative-eagle-topk",
          "--speculative-num-draft-tokens",
          "--enable-two-batch-overlap",
          "--enable-eplb",
          "--ep-num-redundant-experts",
          "--disable-radix-cache",
          "--disable-overlap-schedule",
          "--enable-mixed-chunk",
          "--scheduler-recv-interval",
          "--disable-cuda-graph",
          "--cuda-graph-max-bs",
          "--disaggregation-mode",
          "--disaggregation-transfer-backend",
          "--base-gpu-id",
          "--nnodes",
          "--node-rank",
          "--dist-init-addr",
          "--host",
          "--port"};
}

}  // namespace

void read_sglang(const ParsedArgs& a, const EngineArgs& args, Reading& r) {
  const SglangLayout l = read_layout(a, args, r);
  read_capacity(a, args, l, *r.out);
  read_features(a, args, *r.out);
  r.understood = understood_flags();
  r.max_model_len = a.get_int(args, "--context-length", 0);
}

}  // namespace dayzero::deploy::detail
