#include "executor/runner.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "executor/registry.h"
#include "model/error.h"
#include "simulate/plan_json.h"

namespace dayzero::executor {

namespace {
// The model a plan names (Plan::model, a config path as `plan` writes it) against
// the one being run: same architecture and shapes (layers may be truncated, as
// `synth --layers` does).
void check_plan_model(const simulate::Plan& plan, const model::Model& m, const std::string& source) {
  if (plan.model.empty() || !std::filesystem::exists(plan.model)) return;  // a bare name: nothing to compare
  const model::ModelConfig p = model::load_config(plan.model);
  const auto& c = m.config;
  auto differ = [&](const char* what, int64_t planned, int64_t actual) {
    if (planned != actual)
      throw model::ConfigError(source, "model", "\"" + plan.model + "\"",
                               std::string("the plan is for another model: its ") + what + " is " +
                                   std::to_string(planned) + ", the model run has " + std::to_string(actual));
  };
  if (p.architecture != c.architecture)
    throw model::ConfigError(source, "model", "\"" + plan.model + "\"",
                             "the plan is for another model: " + p.architecture + ", the model run is " + c.architecture);
  differ("hidden_size", p.hidden_size, c.hidden_size);
  differ("num_attention_heads", p.num_heads, c.num_heads);
  differ("num_key_value_heads", p.num_kv_heads, c.num_kv_heads);
  differ("vocab_size", p.vocab_size, c.vocab_size);
  differ("routed experts", p.moe.num_experts, c.moe.num_experts);
}
}  // namespace

void check_plan(const simulate::Plan& plan, const model::Model& m, int world_size, const std::string& plan_source) {
  const int world = plan.world_size();
  if (world != world_size)
    throw model::ConfigError(plan_source, "pp x attention.tp x attention.dp", std::to_string(world),
                             "the plan needs " + std::to_string(world) + " ranks but " + std::to_string(world_size) +
                                 (world_size == 1 ? " rank runs it" : " ranks run it"));
  simulate::validate_plan(plan, m, static_cast<uint32_t>(world_size), plan_source);
  check_plan_model(plan, m, plan_source);
}

int64_t argmax(std::span<const float> row) {
  return std::max_element(row.begin(), row.end()) - row.begin();
}

Runner::Runner(const model::Model& m, const simulate::Plan& plan, Communicator& comm,
               const std::filesystem::path& weights, const RunnerOptions& options)
    : m_(m), plan_(plan), comm_(comm), weights_dir_(weights), options_(options), timer_(options.timing_iterations) {
  check_plan(plan, m, comm.size(), options.plan_source);
  const int ranks = plan.world_size();
  auto unsupported = [&](const char* field, int v) {
    if (v != 1)
      throw model::ConfigError(options.plan_source, field, std::to_string(v),
                               "sharded execution is not supported yet on " + std::to_string(ranks) +
                                   " ranks (this executor runs attention TP only: pp = ep = dp = 1)");
  };
  // Attention TP: dense GQA models (llama, qwen3 families) whose heads, FFN width
  // and vocabulary divide evenly.
  const int tp = plan.attention.tp;
  if (tp > 1) {
    const auto& c = m.config;
    auto refuse = [&](const std::string& why) {
      throw model::ConfigError(options.plan_source, "attention.tp", std::to_string(tp),
                               "tensor parallelism on " + std::to_string(ranks) + " ranks is not supported " + why);
    };
    if (c.is_moe()) refuse("yet for MoE models (dense llama / qwen3 families only)");
    if (c.attention == model::AttentionKind::mla) refuse("yet for MLA attention (dense llama / qwen3 families only)");
    for (const auto& layer : m.layers)
      for (const auto& o : layer.ops)
        if (o.kind == model::OpKind::attention && o.attn.sinks) refuse("yet with attention sinks");
    auto divides = [&](const char* what, int64_t n) {
      if (n % tp != 0) refuse("here: " + std::string(what) + " " + std::to_string(n) + " is not divisible by it");
    };
    divides("num_attention_heads", c.num_heads);
    divides("intermediate_size", c.intermediate_size);
    divides("vocab_size", c.vocab_size);
    if (c.num_kv_heads % tp != 0 && tp % c.num_kv_heads != 0)
      refuse("here: num_key_value_heads " + std::to_string(c.num_kv_heads) + " neither divides nor is divisible by it");
  }
  unsupported("attention.dp", plan.attention.dp);
  unsupported("pp", plan.pp);
  unsupported("moe.ep", plan.moe.ep);
  unsupported("moe.tp", plan.moe.tp);
  unsupported("moe.dp", plan.moe.dp);
  for (const auto& v : required_ops(m))  // before reading weights: a missing kernel is a clear error up front
    find_kernel(cpu_kernel_table(), "cpu", v.kind, v.variant);

  // This rank's place (rank arithmetic of the Plan: TP innermost, then DP, then PP).
  const int r = comm.rank();
  const auto per_stage = plan.layers_per_stage(m.config.num_layers);
  const int stage = plan.stage_of(r);
  for (int s = 0; s < stage; ++s) par_.first_layer += per_stage[static_cast<size_t>(s)];
  par_.end_layer = par_.first_layer + per_stage[static_cast<size_t>(stage)];
  par_.first_stage = stage == 0;
  par_.last_stage = stage == plan.pp - 1;
  par_.tp_rank = plan.attn_tp_index(r);
  par_.tp_size = plan.attention.tp;
  par_.ep_rank = plan.ep_index(r);
  par_.ep_size = plan.moe.ep;
  // TP only (pp = dp = ep = 1): the world is the TP group. Its collectives are
  // timed through the decorator (the same repeat count as the ops).
  Communicator* group = &comm;
  if (comm.size() > 1) {
    timed_comm_ = std::make_unique<TimedCommunicator>(comm, options.timing_iterations);
    group = timed_comm_.get();
  }
  par_.tp_comm = par_.ep_comm = group;

  const auto& q = m.config.quant.format;
  weights_ = std::make_unique<WeightStore>(weights, needed_weights(m, par_),
                                           q.block_rows > 0 ? q.block_rows : model::kFp8DefaultBlock,
                                           q.block_cols > 0 ? q.block_cols : model::kFp8DefaultBlock);
  forward_ = std::make_unique<Forward>(m, *weights_, par_, timer_, m.config.rms_norm_eps);
}

Runner::~Runner() = default;

Tensor Runner::step(std::span<const int64_t> tokens) {
  std::vector<int64_t> pos(tokens.size());
  const int64_t start = forward_->cached_tokens();
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = start + static_cast<int64_t>(i);
  Tensor x = forward_->embed(tokens);
  for (int64_t l = par_.first_layer; l < par_.end_layer; ++l) forward_->layer(l, x, pos);
  return forward_->head(std::move(x));
}

RunResult Runner::run(std::span<const int64_t> prompt, int64_t decode_steps) {
  if (ran_) throw std::logic_error("Runner::run: a Runner runs once (its KV cache is full)");
  ran_ = true;
  if (prompt.empty()) throw std::runtime_error("the prompt is empty");
  if (decode_steps < 0) throw std::runtime_error("decode steps must be >= 0, not " + std::to_string(decode_steps));
  for (int64_t t : prompt)
    if (t < 0 || t >= m_.config.vocab_size)
      throw std::runtime_error("prompt token " + std::to_string(t) + " is outside the vocabulary [0, " +
                               std::to_string(m_.config.vocab_size) + ")");
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a) { return std::chrono::duration<double>(clock::now() - a).count(); };
  RunResult r;
  Measurements& ms = r.measurements;
  timer_.set_phase("prefill");
  // Step times exclude the timers' repeats (OpTimer and TimedCommunicator overhead_s).
  auto overhead = [&] { return timer_.overhead_s() + (timed_comm_ ? timed_comm_->overhead_s() : 0.0); };
  auto t0 = clock::now();
  double o0 = overhead();
  r.prefill_logits = step(prompt);
  ms.prefill_s = seconds(t0) - (overhead() - o0);
  const int64_t V = r.prefill_logits.cols();
  r.tokens.push_back(argmax({r.prefill_logits.row(r.prefill_logits.rows() - 1), static_cast<size_t>(V)}));
  timer_.set_phase("decode");
  for (int64_t i = 0; i < decode_steps; ++i) {
    const int64_t tok = r.tokens.back();
    t0 = clock::now();
    o0 = overhead();
    r.decode_logits.push_back(step({&tok, 1}));
    ms.decode_step_s.push_back(seconds(t0) - (overhead() - o0));
    r.tokens.push_back(argmax(r.decode_logits.back().data));
  }
  ms.model = m_.config.source;
  ms.weights = weights_dir_.string();
  ms.rank = comm_.rank();
  ms.world_size = comm_.size();
  ms.prompt.assign(prompt.begin(), prompt.end());
  ms.tokens = r.tokens;
  ms.memory.weights_bytes = weights_->mapped_bytes() + weights_->float_bytes();
  ms.memory.kv_bytes = forward_->kv_bytes();
  ms.memory.workspace_bytes = std::max(forward_->workspace_bytes(), r.prefill_logits.numel() * 4);
  ms.memory.rss_hwm_bytes = rss_peak_bytes();
  ms.plan = plan_;
  ms.machine = this_machine();
  ms.ops = timer_.results();
  if (timed_comm_) ms.collectives = timed_comm_->results();
  ms.timing_iterations = options_.timing_iterations;
  return r;
}

}  // namespace dayzero::executor
