// Measured disaggregated runs predicted one by one (bench_loader.h): each pool's plan
// from its columns, engine settings as the publisher's deployment generator writes
// them for a prefill and a decode worker, served by serve/disaggregated.h.
#include <string>

#include "serve/bench_loader.h"
#include "serve/disaggregated.h"
#include "simulate/simulator.h"

namespace dayzero::serve::detail {

namespace {

// A pool's engine settings, as aiconfigurator's generator writes them for a worker of
// the role (src/aiconfigurator/generator/rule_plugin/benchmark/{vllm,sglang,trtllm}.rule):
// the pool's batch size as the sequences per step; a prefill worker's step capped at
// ISL + 1500 tokens (vLLM and TensorRT-LLM max_num_tokens, SGLang max_prefill_tokens)
// and TensorRT-LLM's prefill without the overlap scheduler; a decode worker's step at
// its batch size (max_num_tokens = max_batch_size). The rest as for an aggregated
// worker of the same deployer (no prefix caching, SGLang prefill-first, TensorRT-LLM's
// KV share 0.8).
EngineProfile pool_profile(Engine e, const Deployment& d, const BenchPool& pool, const BenchRow& r, bool prefill) {
  EngineProfile p = default_profile(e, d);
  p.max_running = std::max<int64_t>(1, pool.batch_size);
  p.prefix_caching = false;
  if (e == Engine::sglang) p.policy = PrefillPolicy::prefill_first;
  if (e == Engine::trtllm) p.memory.memory_fraction = 0.8;
  if (prefill) {
    p.token_budget = e == Engine::sglang ? std::min(r.isl + 1500, p.token_budget) : r.isl + 1500;
    if (e == Engine::trtllm) p.overlap_scheduling = false;
  } else {
    p.token_budget = std::max<int64_t>(p.max_running, 1);
    if (e == Engine::sglang) p.token_budget = default_profile(e, d).token_budget;  // decode steps: max_running
  }
  p.memory.step_tokens = p.token_budget;
  p.memory.logit_rows = std::min(p.memory.logit_rows, p.max_running);
  return p;
}

// The limits InferenceX's srt-slurm recipe ran each pool's workers with
// (srt_slurm_recipes.h), over the generator's rule; a limit the recipe leaves to the
// engine keeps the rule's.
void apply_recipe(const SrtSlurmRecipe& x, EngineProfile& prefill, EngineProfile& decode) {
  if (x.prefill_max_batch > 0) prefill.max_running = x.prefill_max_batch;
  if (x.prefill_max_tokens > 0) prefill.token_budget = x.prefill_max_tokens;
  if (x.decode_max_batch > 0) decode.max_running = x.decode_max_batch;
  if (x.decode_max_tokens > 0) decode.token_budget = std::max(x.decode_max_tokens, decode.max_running);
  for (EngineProfile* p : {&prefill, &decode}) {
    p->memory.step_tokens = p->token_budget;
    p->memory.logit_rows = std::min(p->memory.logit_rows, p->max_running);
  }
}

void check_pool(const BenchPool& p, const char* name) {
  if (p.workers < 1 || p.batch_size < 1)
    throw Rejected{std::string("the ") + name +
                   " pool's workers and batch size are not given: a disaggregated run is predicted only "
                   "from both pools' layouts, batch sizes and worker counts"};
}

}  // namespace

void predict_disaggregated(const BenchRow& r, Loader& loader, const BenchOptions& o, RowPrediction& out) {
  check_pool(r.prefill, "prefill");
  check_pool(r.decode, "decode");
  check_concurrency(r, "decode_batch_size x decode pp x decode attention_dp x decode workers");
  const auto engine = parse_engine(r.backend);
  if (!engine) throw Rejected{"engine " + r.backend + " is not one of vllm, sglang, trtllm"};
  const model::Model& m = loader.model(r.model_path);
  const topology::Cluster& c = loader.cluster(r.system, r.gpus());
  const SrtSlurmRecipe* x = r.deployer == Deployer::inferencex ? find_srt_slurm_recipe(loader.srt_slurm(), r) : nullptr;
  // Each pool at the layout its engine ran (a vLLM pool written as TP: srt_slurm_recipes.h).
  const BenchPool pre = x ? vllm_data_parallel(r.prefill, x->prefill_attention_dp, r) : r.prefill;
  const BenchPool dec = x ? vllm_data_parallel(r.decode, x->decode_attention_dp, r) : r.decode;
  DisaggOptions d;
  d.prefill.plan = plan_of(r, pre, pre.batch_size * pre.attention_dp, m, c);
  d.decode.plan = plan_of(r, dec, dec.batch_size * dec.attention_dp * dec.pp, m, c);
  d.prefill.workers = static_cast<int>(pre.workers);
  d.decode.workers = static_cast<int>(dec.workers);
  const auto& dev = c.device_spec();
  EngineProfile prefill = pool_profile(*engine, deployment_of(d.prefill.plan, m, dev), pre, r, true);
  EngineProfile decode = pool_profile(*engine, deployment_of(d.decode.plan, m, dev), dec, r, false);
  if (x) apply_recipe(*x, prefill, decode);
  apply_fp8_scales(r, m, prefill);
  apply_fp8_scales(r, m, decode);
  d.prefill.engine = o.engines.apply(prefill);
  d.decode.engine = o.engines.apply(decode);
  d.client = bench_client(r, o);
  simulate::Simulator sim(m, c, loader.efficiency().for_device(dev.name));
  // The search's steady state of this deployment (simulate/disaggregated.h): the pools'
  // rates, one prompt, one KV transfer, the decode worker's step.
  plan::Plan whole = d.decode.plan;
  const plan::Plan& w = d.prefill.plan;
  whole.disaggregated = {d.prefill.workers, d.decode.workers, {w.pp, w.attention, w.moe, w.workload.batch}};
  simulate::SimulateOptions steady_opts{false, false, true};
  steady_opts.kernels = engine_kernels(d.decode.engine);
  const simulate::Prediction steady = sim.simulate(whole, steady_opts);
  out.steady_ttft_s = steady.ttft_s;
  out.steady_tpot_s = steady.tpot_s;
  ServeResult s;
  try {
    s = simulate_disaggregated(sim, d);
  } catch (const std::invalid_argument& e) {
    throw Rejected{std::string("does not fit: ") + e.what()};
  }
  record_served(s, dev.name, m, d.decode.engine.overlap_scheduling, out);
}

}  // namespace dayzero::serve::detail
