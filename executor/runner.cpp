#include "executor/runner.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/error.h"
#include "executor/registry.h"
#include "plan/plan_json.h"

namespace dayzero::executor {

namespace {
// The model a plan names (Plan::model, a config path as `plan` writes it) against
// the one being run: same architecture and shapes (layers may be truncated, as
// `synth --layers` does).
void check_plan_model(const plan::Plan& plan, const model::Model& m, const std::string& source) {
  if (plan.model.empty() || !std::filesystem::exists(plan.model)) return;  // a bare name: nothing to compare
  const model::ModelConfig p = model::load_config(plan.model);
  const auto& c = m.config;
  auto differ = [&](const char* what, int64_t planned, int64_t actual) {
    if (planned != actual)
      throw core::InputError(source, "model", "\"" + plan.model + "\"",
                             std::string("the plan is for another model: its ") + what + " is " +
                                 std::to_string(planned) + ", the model run has " + std::to_string(actual));
  };
  if (p.architecture != c.architecture)
    throw core::InputError(source, "model", "\"" + plan.model + "\"",
                           "the plan is for another model: " + p.architecture + ", the model run is " + c.architecture);
  differ("hidden_size", p.hidden_size, c.hidden_size);
  differ("num_attention_heads", p.num_heads, c.num_heads);
  differ("num_key_value_heads", p.num_kv_heads, c.num_kv_heads);
  differ("vocab_size", p.vocab_size, c.vocab_size);
  differ("routed experts", p.moe.num_experts, c.moe.num_experts);
}
}  // namespace

void check_plan(const plan::Plan& plan, const model::Model& m, int world_size, const std::string& plan_source) {
  const int world = plan.world_size();
  if (world != world_size)
    throw core::InputError(plan_source, "pp x attention.tp x attention.dp", std::to_string(world),
                           "the plan needs " + std::to_string(world) + " ranks but " + std::to_string(world_size) +
                               (world_size == 1 ? " rank runs it" : " ranks run it"));
  plan::validate_plan(plan, m, static_cast<uint32_t>(world_size), plan_source);
  check_plan_model(plan, m, plan_source);
  // What the shards need beyond validate_plan (heads, KV heads and FFN widths are
  // checked there): an even split of the vocabulary, and experts stored one tensor each.
  const auto& c = m.config;
  auto refuse = [&](const char* field, int v, const std::string& why) {
    throw core::InputError(plan_source, field, std::to_string(v), why);
  };
  if (plan.moe.redundant_experts > 0)
    refuse("moe.redundant_experts", plan.moe.redundant_experts,
           "the executor places each expert once (contiguous ids per EP rank); redundant replicas are planned "
           "and costed, not run");
  const int tp = plan.attention.tp;
  if (c.vocab_size % tp != 0)
    refuse("attention.tp", tp,
           "does not divide vocab_size " + std::to_string(c.vocab_size) + " (the executor splits it evenly)");
  if (plan.moe.tp > 1)
    for (const auto& layer : m.layers)
      for (const auto& o : layer.ops)
        if (o.kind == model::OpKind::expert_gemm && o.weights.at(0).find("{e}") == std::string::npos)
          refuse(
              "moe.tp", plan.moe.tp,
              "the experts are fused tensors (" + o.weights.at(0) + "): the executor splits experts by EP only here");
}

int64_t argmax(std::span<const float> row) { return std::max_element(row.begin(), row.end()) - row.begin(); }

std::vector<int64_t> replica_sequences(int64_t sequences, int dp, int replica) {
  std::vector<int64_t> out;
  for (int64_t i = replica; i < sequences; i += dp) out.push_back(i);
  return out;
}

Runner::Runner(const model::Model& m, const plan::Plan& plan, Communicator& comm, const std::filesystem::path& weights,
               const RunnerOptions& options)
    : m_(m), plan_(plan), comm_(comm), weights_dir_(weights), options_(options), timer_(options.timing_iterations) {
  // The process's own pages before the run's, less the program file's (shared by a
  // host's ranks, and a build's size); what MPI_Init mapped (its shared-memory
  // transport) counts with the communication buffers, as the ledger has it.
  runtime_bytes_ = std::max<int64_t>(0, rss_current_bytes() - program_resident_bytes() - comm.library_bytes());
  // Every rank checks the plan and the kernels, then reads its weights; a failure
  // on any rank is reported by every rank (AllRanksError), never left waiting.
  std::string error;
  try {
    check_plan(plan, m, comm.size(), options.plan_source);
    backend_ = &find_backend(options.backend);
    for (const auto& v : required_ops(m))  // before reading weights: a missing kernel is a clear error up front
      backend_->kernel(v.kind, v.variant);
    if (backend_->begin_run) backend_->begin_run();  // e.g. no GPU: fails here, on every rank alike
    timer_.set_device_clock(backend_->device_seconds, backend_->device_clock);
    timer_.set_device_span(backend_->device_span_begin, backend_->device_span_end);
  } catch (const std::exception& e) {
    error = e.what();
  }
  raise_on_every_rank(comm, error);

  // This rank's place (Plan rank arithmetic: TP innermost, then DP, then PP).
  const int r = comm.rank(), rps = plan.ranks_per_stage();
  stage_ = plan.stage_of(r);
  const auto per_stage = plan.layers_per_stage(m.config.num_layers);
  for (int s = 0; s < stage_; ++s) par_.first_layer += per_stage[static_cast<size_t>(s)];
  par_.end_layer = par_.first_layer + per_stage[static_cast<size_t>(stage_)];
  par_.first_stage = stage_ == 0;
  par_.last_stage = stage_ == plan.pp - 1;
  par_.tp_rank = plan.attn_tp_index(r);
  par_.tp_size = plan.attention.tp;
  par_.stage_rank = r % rps;
  par_.stage_size = rps;
  par_.moe_tp_rank = plan.moe_tp_index(r);
  par_.moe_tp_size = plan.moe.tp;
  par_.ep_rank = plan.ep_index(r);
  par_.ep_size = plan.moe.ep;
  par_.moe_dp_rank = plan.moe_dp_index(r);
  // The groups (collective over the world, in this order on every rank), each timed.
  const int64_t before_groups = rss_current_bytes();
  tp_group_ = comm.split(stage_ * plan.attention.dp + plan.attn_dp_index(r), par_.tp_rank);
  stage_group_ = comm.split(stage_, par_.stage_rank);
  comm_buffer_bytes_ = comm.library_bytes() + std::max<int64_t>(0, rss_current_bytes() - before_groups);
  tp_group_->set_name("the tensor-parallel group");
  stage_group_->set_name("the pipeline stage's group");  // expert all-to-alls
  const int it = options.timing_iterations;
  timed_world_ = std::make_unique<TimedCommunicator>(comm, it);
  timed_tp_ = std::make_unique<TimedCommunicator>(*tp_group_, it);
  timed_stage_ = std::make_unique<TimedCommunicator>(*stage_group_, it);
  par_.tp_comm = timed_tp_.get();
  par_.stage_comm = timed_stage_.get();

  const auto load_start = std::chrono::steady_clock::now();
  try {
    const auto& q = m.config.quant.format;
    weights_ = std::make_unique<WeightStore>(weights, needed_weights(m, par_),
                                             q.block_rows > 0 ? q.block_rows : model::kFp8DefaultBlock,
                                             q.block_cols > 0 ? q.block_cols : model::kFp8DefaultBlock, &m.config);
    // The plan's weight precisions (weight_convert.h): what the engines would load.
    for (const auto& [name, p] : planned_conversions(m, plan.dtypes, weights_->names()))
      if (converts_to(p)) weights_->convert(name, p);
  } catch (const std::exception& e) {
    error = e.what();
  }
  raise_on_every_rank(comm, error);
  // Pages resident and TP shards built before the first step: step times exclude
  // reading and preparing the weights (load_s in the Measurements).
  forward_ = std::make_unique<Forward>(m, *backend_, *weights_, par_, timer_, m.config.rms_norm_eps,
                                       plan.kv_block_tokens, plan.dtypes.kv_cache);
  forward_->prepare();
  load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
}

Runner::~Runner() = default;

Tensor Runner::step(const std::vector<int>& seqs, const std::vector<int64_t>& counts, std::span<const int64_t> tokens,
                    const std::vector<int64_t>* keep) {
  if (options_.before_step) options_.before_step(steps_);
  ++steps_;
  const TensorPeakScope activations(&activation_peak_bytes_);
  const Batch b = forward_->begin_step(seqs, counts);
  const int rps = plan_.ranks_per_stage(), r = comm_.rank();
  Tensor x;
  if (par_.first_stage) {
    x = forward_->embed(tokens);
  } else {
    x = Tensor({b.rows(), m_.config.hidden_size});
    timed_world_->recv(x.data, r - rps);
  }
  for (int64_t l = par_.first_layer; l < par_.end_layer; ++l) forward_->layer(l, x, b);
  if (!par_.last_stage) {
    timed_world_->send(x.data, r + rps);
    return {};
  }
  if (keep) {  // the rows whose logits pick tokens, gathered where x lies (a decode batch: x as it is)
    if (keep->empty()) return {};
    bool every_row = static_cast<int64_t>(keep->size()) == x.rows();
    for (size_t i = 0; every_row && i < keep->size(); ++i) every_row = (*keep)[i] == static_cast<int64_t>(i);
    if (!every_row) x = backend_->gather_rows(x, *keep);
  }
  return forward_->head(std::move(x));
}

// Tokens travel as float32 (exact below 2^24) from the last stage to the rank with
// the same place in every earlier stage.
void Runner::send_tokens(std::span<const int64_t> tokens) {
  if (plan_.pp == 1) return;
  const int rps = plan_.ranks_per_stage(), r = comm_.rank();
  std::vector<float> buf(tokens.begin(), tokens.end());
  for (int s = 0; s < plan_.pp - 1; ++s) timed_world_->send(buf, r - (plan_.pp - 1 - s) * rps);
}

void Runner::recv_tokens(std::span<int64_t> tokens) {
  if (plan_.pp == 1) return;
  const int rps = plan_.ranks_per_stage(), r = comm_.rank();
  std::vector<float> buf(tokens.size());
  timed_world_->recv(buf, r + (plan_.pp - 1 - stage_) * rps);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(buf[i]);
}

RunResult Runner::run(std::span<const int64_t> prompt, int64_t decode_steps) {
  return run(std::vector<std::vector<int64_t>>{std::vector<int64_t>(prompt.begin(), prompt.end())}, decode_steps);
}

}  // namespace dayzero::executor
