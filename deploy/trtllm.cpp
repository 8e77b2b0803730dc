// TensorRT-LLM (`trtllm-serve` with the PyTorch backend and its extra-options YAML):
// a plan's workers as TensorRT-LLM commands, and such a command line and YAML as a
// plan. Flags and YAML fields are checked against the pinned argument list
// (scenarios/engines/trtllm.json); their meaning, from trtllm-serve's documentation
// and the LLM API's argument reference.
#include <algorithm>

#include "deploy/worker.h"

namespace dayzero::deploy::detail {

namespace {

// TensorRT-LLM's attention DP (enable_attention_dp) gives every rank of --tp_size its
// own attention replica; experts split --ep_size ways and tensor-parallel over the
// rest (moe_tensor_parallel_size = tp_size / ep_size).
void check_layout(const Context& ctx, const Worker& w) {
  const plan::Plan& p = w.plan;
  if (!w.moe && p.attention.dp > 1)
    throw Unexpressible(ctx.engine, "attention.dp",
                        std::to_string(p.attention.dp) +
                            " replicas of a dense model: trtllm-serve runs one replica; start one per replica "
                            "(export the dp 1 plan) behind a load balancer");
  if (p.attention.dp > 1 && p.attention.tp > 1)
    throw Unexpressible(ctx.engine, "attention",
                        "tp " + std::to_string(p.attention.tp) + " x dp " + std::to_string(p.attention.dp) +
                            ": TensorRT-LLM's attention DP (enable_attention_dp) runs one attention replica per "
                            "rank; it has attention tp 1 x dp N or tp N x dp 1");
  if (w.moe && (p.moe.dp != 1 || p.moe.tp * p.moe.ep != p.ranks_per_stage()))
    throw Unexpressible(ctx.engine, "moe",
                        "dp " + std::to_string(p.moe.dp) +
                            ": TensorRT-LLM splits a stage's experts over all its ranks (--ep_size ways, "
                            "tensor-parallel over the rest); replicated expert groups have no setting");
  if (!p.stage_layers.empty())
    throw Unexpressible(ctx.engine, "stage_layers", "trtllm-serve splits the layers evenly over --pp_size stages");
  if (ctx.settings->two_batch_overlap && *ctx.settings->two_batch_overlap)
    throw Unexpressible(ctx.engine, "engine.two_batch_overlap", "TensorRT-LLM has no two-batch-overlap option");
}

ConfigFile extra_options(const Context& ctx, const Worker& w, const std::string& name) {
  const plan::Plan& p = w.plan;
  const plan::EngineSettings& s = *ctx.settings;
  ConfigFile f;
  f.name = name;
  if (p.attention.dp > 1) f.fields.emplace_back("enable_attention_dp", "true");
  f.fields.emplace_back("kv_cache_config.dtype", p.dtypes.kv_cache == plan::KvDtype::fp8 ? "fp8" : "auto");
  f.fields.emplace_back("kv_cache_config.tokens_per_block", std::to_string(p.kv_block_tokens));
  if (s.prefix_caching)
    f.fields.emplace_back("kv_cache_config.enable_block_reuse", *s.prefix_caching ? "true" : "false");
  if (p.speculative.on()) {
    if (p.speculative.method == plan::SpecMethod::mtp) {
      f.fields.emplace_back("speculative_config.decoding_type", "MTP");
      f.fields.emplace_back("speculative_config.num_nextn_predict_layers", std::to_string(p.speculative.draft_tokens));
    } else {
      if (ctx.options->draft_model_id.empty())
        throw Unexpressible(ctx.engine, "speculative.method",
                            "an EAGLE draft is a model of its own: export with --draft-model-id NAME");
      f.fields.emplace_back("speculative_config.decoding_type", "Eagle");
      f.fields.emplace_back("speculative_config.max_draft_len", std::to_string(p.speculative.draft_tokens));
      f.fields.emplace_back("speculative_config.speculative_model_dir", ctx.options->draft_model_id);
    }
  }
  if (p.moe.redundant_experts > 0) {
    // Redundant experts: the Wide-EP backend's load balancer with a slot per expert and
    // per replica, rebalanced online from the routing it sees (one layer per
    // iteration), as TensorRT-LLM's examples/wide_ep configures it.
    f.fields.emplace_back("moe_config.backend", "WIDEEP");
    f.fields.emplace_back("moe_config.load_balancer.num_slots",
                          std::to_string(ctx.model->config.moe.num_experts + p.moe.redundant_experts));
    f.fields.emplace_back("moe_config.load_balancer.layer_updates_per_iter", "1");
  }
  if (s.chunked_prefill) f.fields.emplace_back("enable_chunked_prefill", *s.chunked_prefill ? "true" : "false");
  if (s.cuda_graph_max_batch) {  // 0: graphs off (cuda_graph_config: null)
    if (*s.cuda_graph_max_batch == 0) f.fields.emplace_back("cuda_graph_config", "null");
    else f.fields.emplace_back("cuda_graph_config.max_batch_size", std::to_string(*s.cuda_graph_max_batch));
  }
  if (s.adp_balance) f.fields.emplace_back("attention_dp_config.enable_balance", *s.adp_balance ? "true" : "false");
  if (s.adp_timeout_iters)
    f.fields.emplace_back("attention_dp_config.timeout_iters", std::to_string(*s.adp_timeout_iters));
  if (s.adp_batching_wait_iters)
    f.fields.emplace_back("attention_dp_config.batching_wait_iters", std::to_string(*s.adp_batching_wait_iters));
  if (s.batch_wait_timeout_iters)
    f.fields.emplace_back("batch_wait_timeout_iters", std::to_string(*s.batch_wait_timeout_iters));
  if (s.batch_wait_max_tokens_ratio)
    f.fields.emplace_back("batch_wait_max_tokens_ratio", number(*s.batch_wait_max_tokens_ratio));
  // A prefill (context) worker runs without the overlap scheduler, as TensorRT-LLM's
  // disaggregated serving examples configure it.
  const bool no_overlap = (s.overlap_scheduling && !*s.overlap_scheduling) || w.role == "prefill";
  if (no_overlap) f.fields.emplace_back("disable_overlap_scheduler", "true");
  if (w.role != "serve") f.fields.emplace_back("cache_transceiver_config.backend", "DEFAULT");
  return f;
}

}  // namespace

void emit_trtllm(const Context& ctx, const std::vector<Worker>& workers, Launch& out) {
  (void)weight_conversion(ctx, false);
  const int g = ctx.gpus_per_node();
  std::map<std::string, std::vector<std::string>> urls;  // role -> worker URLs (disaggregated)
  for (const Worker& w : workers) {
    check_layout(ctx, w);
    const plan::Plan& p = w.plan;
    const std::string file = w.role == "serve" ? "extra-llm-api-config.yaml" : w.role + "-config.yaml";
    if (std::none_of(out.files.begin(), out.files.end(), [&](const ConfigFile& f) { return f.name == file; }))
      out.files.push_back(extra_options(ctx, w, file));
    Command c;
    c.node = w.first_node;
    c.host = ctx.host(c.node);
    c.role = w.role;
    if (const auto env = visible_devices(w)) c.env.push_back(*env);
    if (w.nodes > 1) {
      // One MPI job over the worker's nodes (TensorRT-LLM's multi-node trtllm-serve:
      // mpirun or srun around trtllm-llmapi-launch).
      std::string hosts;
      for (int k = 0; k < w.nodes; ++k)
        hosts += (hosts.empty() ? "" : ",") + ctx.host(w.first_node + k) + ":" + std::to_string(g);
      c.launcher = {"mpirun", "-H", hosts, "-np", std::to_string(p.world_size()), "trtllm-llmapi-launch"};
    }
    c.program = {"trtllm-serve", ctx.model_id};
    add(c.flags, "--backend", "pytorch");
    add(c.flags, "--tp_size", p.ranks_per_stage());
    if (p.pp > 1) add(c.flags, "--pp_size", p.pp);
    if (w.moe && p.moe.ep > 1) add(c.flags, "--ep_size", p.moe.ep);
    add(c.flags, "--max_batch_size", w.max_running);
    add(c.flags, "--max_num_tokens", w.token_budget);
    add(c.flags, "--max_seq_len", w.max_model_len);
    add(c.flags, "--kv_cache_free_gpu_memory_fraction", number(w.memory_fraction));
    add(c.flags, "--host", "0.0.0.0");
    add(c.flags, "--port", w.port);
    add(c.flags, "--extra_llm_api_options", file);
    c.comment = (w.role == "serve" ? std::string("the server") : w.role + " worker " + std::to_string(w.index)) +
                (w.nodes > 1 ? ", one MPI job over " + std::to_string(w.nodes) + " nodes" : "");
    urls[w.role].push_back(c.host + ":" + std::to_string(w.port));
    out.commands.push_back(std::move(c));
  }
  if (!ctx.plan->disaggregated.on()) return;
  ConfigFile router;
  router.name = "disagg-config.yaml";
  router.llm_args = false;
  const auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& u : v) s += (s.empty() ? "" : ", ") + u;
    return "[" + s + "]";
  };
  router.fields = {{"hostname", "0.0.0.0"},
                   {"port", std::to_string(ctx.options->port + 100)},
                   {"context_servers.num_instances", std::to_string(urls["prefill"].size())},
                   {"context_servers.urls", list(urls["prefill"])},
                   {"generation_servers.num_instances", std::to_string(urls["decode"].size())},
                   {"generation_servers.urls", list(urls["decode"])}};
  out.files.push_back(router);
  Command c;
  c.node = 0;
  c.host = ctx.host(0);
  c.role = "router";
  c.program = {"trtllm-serve", "disaggregated"};
  c.subcommand = "disaggregated";
  add(c.flags, "-c", router.name);
  c.comment = "the disaggregated router: requests on port " + std::to_string(ctx.options->port + 100);
  out.commands.push_back(std::move(c));
  out.notes.push_back(
      "the workers move the KV cache with TensorRT-LLM's cache transceiver "
      "(cache_transceiver_config.backend DEFAULT: NIXL or UCX as built); start the router once every "
      "worker answers");
}

void read_trtllm(const ParsedArgs& a, const EngineArgs& args, const std::map<std::string, std::string>& yaml,
                 Reading& r) {
  Imported& out = *r.out;
  plan::Plan& p = out.plan;
  const auto y = [&](const std::string& key) -> const std::string* {
    const auto it = yaml.find(key);
    return it == yaml.end() ? nullptr : &it->second;
  };
  const auto truthy = [](const std::string* v) { return v && (*v == "true" || *v == "True" || *v == "1"); };
  const int tp_size = static_cast<int>(a.get_int(args, "--tp_size", 1));
  const int ep_size = static_cast<int>(a.get_int(args, "--ep_size", 1));
  p.pp = static_cast<int>(a.get_int(args, "--pp_size", 1));
  const bool adp = truthy(y("enable_attention_dp"));
  p.attention = adp ? plan::AttentionLayout{1, tp_size} : plan::AttentionLayout{tp_size, 1};
  if (ep_size < 1 || tp_size % ep_size != 0)
    throw std::invalid_argument("--ep_size " + std::to_string(ep_size) + " does not divide --tp_size " +
                                std::to_string(tp_size));
  p.moe = r.moe ? plan::MoeLayout{tp_size / ep_size, ep_size, 1} : plan::MoeLayout{1, 1, tp_size};
  if (const std::string* v = a.get(args, "--max_batch_size")) {
    out.settings.max_running = std::stoll(*v);
    p.workload.batch = *out.settings.max_running * p.attention.dp * p.pp;
  }
  if (const std::string* v = a.get(args, "--max_num_tokens"))
    out.settings.token_budget = p.prefill_chunk_tokens = std::stoll(*v);
  if (const std::string* v = a.get(args, "--kv_cache_free_gpu_memory_fraction"))
    out.settings.memory_fraction = std::stod(*v);
  if (const std::string* v = y("kv_cache_config.dtype"))
    p.dtypes.kv_cache = v->rfind("fp8", 0) == 0 ? plan::KvDtype::fp8 : plan::KvDtype::bf16;
  if (const std::string* v = y("kv_cache_config.tokens_per_block")) p.kv_block_tokens = std::stoll(*v);
  if (const std::string* v = y("kv_cache_config.enable_block_reuse")) out.settings.prefix_caching = truthy(v);
  if (const std::string* v = y("speculative_config.decoding_type")) {
    if (*v == "MTP") {
      p.speculative.method = plan::SpecMethod::mtp;
      const std::string* n = y("speculative_config.num_nextn_predict_layers");
      p.speculative.draft_tokens = n ? std::stoi(*n) : 1;
    } else if (*v == "Eagle" || *v == "Eagle3") {
      p.speculative.method = plan::SpecMethod::eagle;
      const std::string* n = y("speculative_config.max_draft_len");
      p.speculative.draft_tokens = n ? std::stoi(*n) : 1;
    } else {
      throw std::invalid_argument("speculative_config.decoding_type " + *v + " is not one DayZero models (MTP, Eagle)");
    }
  }
  if (const std::string* v = y("moe_config.load_balancer.num_slots"))  // a slot per expert and per replica
    p.moe.redundant_experts = static_cast<int>(std::stoll(*v) - r.experts);
  if (const std::string* v = y("enable_chunked_prefill")) out.settings.chunked_prefill = truthy(v);
  if (const std::string* v = y("cuda_graph_config.max_batch_size")) out.settings.cuda_graph_max_batch = std::stoll(*v);
  else if (const std::string* v = y("cuda_graph_config"); v && *v == "null") out.settings.cuda_graph_max_batch = 0;
  if (const std::string* v = y("attention_dp_config.enable_balance")) out.settings.adp_balance = truthy(v);
  if (const std::string* v = y("attention_dp_config.timeout_iters")) out.settings.adp_timeout_iters = std::stoll(*v);
  if (const std::string* v = y("attention_dp_config.batching_wait_iters"))
    out.settings.adp_batching_wait_iters = std::stoll(*v);
  if (const std::string* v = y("batch_wait_timeout_iters")) out.settings.batch_wait_timeout_iters = std::stoll(*v);
  if (const std::string* v = y("batch_wait_max_tokens_ratio")) out.settings.batch_wait_max_tokens_ratio = std::stod(*v);
  if (truthy(y("disable_overlap_scheduler")) && !y("cache_transceiver_config.backend"))
    out.settings.overlap_scheduling = false;
  r.understood = {"--tp_size",
                  "--pp_size",
                  "--ep_size",
                  "--max_batch_size",
                  "--max_num_tokens",
                  "--max_seq_len",
                  "--kv_cache_free_gpu_memory_fraction",
                  "--backend",
                  "--host",
                  "--port",
                  "--extra_llm_api_options"};
  r.max_model_len = a.get_int(args, "--max_seq_len", 0);
}

}  // namespace dayzero::deploy::detail
