// The bundled models and clusters, and a measured row's plan (bench_loader.h).
#include "serve/bench_loader.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "plan/plan_json.h"
#include "simulate/precisions.h"

namespace dayzero::serve::detail {

namespace {

namespace fs = std::filesystem;

void read_map(const fs::path& file, const char* key, std::map<std::string, std::string>& out) {
  const nlohmann::json j = core::read_json_file(file);
  core::Fields f(j, file.string());
  (void)f.opt_string("description", "");
  const nlohmann::json* m = f.opt_object(key);
  if (!m) f.fail(key, "required field is missing");
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string())
      throw core::InputError(file.string(), std::string(key) + "." + k, v.dump(), "expected a string");
    out[k] = v.get<std::string>();
  }
  f.reject_unknown();
}

// A quantization mode of the rows as a weight precision. The names are aiconfigurator's
// (`GEMMQuantMode` and `MoEQuantMode` in aiconfigurator_core/sdk/common.py, 095f58a): its
// exports write bf16 as empty, and its enum spells it out; per-tensor FP8, static or
// out-of-the-box, streams and multiplies as FP8 like the 128 x 128 blocks.
model::WeightPrecision precision(const std::string& mode, const model::Model& m, const char* column) {
  if (mode.empty() || mode == "bfloat16" || mode == "float16") return model::WeightPrecision::bf16;
  if (is_fp8_quant_mode(mode))
    return m.config.quant.method == model::QuantMethod::fp8 ? model::WeightPrecision::checkpoint
                                                            : model::WeightPrecision::fp8;
  if (mode == "int8_wo") return model::WeightPrecision::int8_w8a16;  // W8A16
  if (mode == "sq") return model::WeightPrecision::int8;             // SmoothQuant W8A8
  // gpt-oss's MXFP4 experts as stored, whichever activations the engine pairs them with.
  if ((mode == "w4a16_mxfp4" || mode == "w4a8_mxfp4_mxfp8") && m.config.quant.method == model::QuantMethod::mxfp4)
    return model::WeightPrecision::checkpoint;
  // INT4 weight-only rows of a compressed-tensors INT4 checkpoint (Kimi-K2.5) run it as stored.
  if (mode == "int4_wo")
    return m.config.quant.method == model::QuantMethod::compressed_int4 ? model::WeightPrecision::checkpoint
                                                                        : model::WeightPrecision::int4;
  // NVFP4 rows name the checkpoint's 4-bit format: an MXFP4 checkpoint (gpt-oss) as stored.
  if (mode == "nvfp4")
    return m.config.quant.method == model::QuantMethod::mxfp4 ? model::WeightPrecision::checkpoint
                                                              : model::WeightPrecision::nvfp4;
  throw Rejected{std::string(column) + " " + mode + " is not modelled yet"};
}

}  // namespace

bool per_tensor_fp8(const BenchRow& r, const model::Model& m) {
  if (m.config.quant.method == model::QuantMethod::fp8) return false;
  if (r.gemm_quant == "fp8_block" || r.moe_quant == "fp8_block") return false;
  return is_fp8_quant_mode(r.gemm_quant) || is_fp8_quant_mode(r.moe_quant);
}

void apply_fp8_scales(const BenchRow& r, const model::Model& m, EngineProfile& p) {
  if (per_tensor_fp8(r, m)) p.separate_activation_quant = false;
}

Loader::Loader(const BenchOptions& o) : o_(o), catalog_(topology::DeviceCatalog::load_builtin(o.data_dir)) {
  read_map(o.data_dir / "models" / "hf_ids.json", "models", models_);
  read_map(o.data_dir / "fidelity" / "systems.json", "systems", systems_);
  // InferenceX's multi-node recipes; a data folder without the table serves disaggregated
  // rows with the generator's rule alone.
  if (const auto recipes = o.data_dir / "fidelity" / "srt-slurm-recipes.csv"; std::filesystem::exists(recipes))
    srt_slurm_ = load_srt_slurm_recipes(recipes);
}

const model::Model& Loader::model(const std::string& hf_id) {
  auto it = loaded_models_.find(hf_id);
  if (it != loaded_models_.end()) return *it->second;
  const auto folder = models_.find(hf_id);
  if (folder == models_.end())
    throw Rejected{"model " + hf_id + " is not among the bundled models (scenarios/models/hf_ids.json)"};
  if (frozen_) throw std::logic_error("bench rows: model " + hf_id + " was not loaded before the rows were served");
  auto m = std::make_unique<model::Model>(model::load_model(o_.data_dir / "models" / folder->second));
  return *loaded_models_.emplace(hf_id, std::move(m)).first->second;
}

const topology::Cluster& Loader::cluster(const std::string& system, int64_t gpus) {
  const std::string key = system + "/" + std::to_string(gpus);
  auto it = clusters_.find(key);
  if (it != clusters_.end()) return *it->second;
  const auto file = systems_.find(system);
  if (file == systems_.end())
    throw Rejected{"GPU system " + system + " has no cluster in scenarios/fidelity/systems.json"};
  topology::ClusterConfig cfg = topology::load_cluster_config(o_.data_dir / file->second);
  if (!catalog_.find(cfg.device)) throw Rejected{"device " + cfg.device + " is not in the device catalog"};
  const int64_t domain = static_cast<int64_t>(cfg.nodes) * cfg.devices_per_node;
  if (cfg.intra_node.domain_nodes <= 1 || gpus > domain) {  // scale-out: as many nodes as the worker needs
    cfg.nodes = static_cast<int>(std::max<int64_t>(1, (gpus + cfg.devices_per_node - 1) / cfg.devices_per_node));
    cfg.node_names.clear();  // the default names, one per node
  }
  // Through the reader again, so that the edited description passes the same checks as a file.
  nlohmann::json edited = cfg;
  if (cfg.node_names.empty()) edited.erase("node_names");
  cfg = topology::cluster_config_from_json(
      edited, (o_.data_dir / file->second).string() + " (" + std::to_string(gpus) + " GPUs)");
  if (frozen_) throw std::logic_error("bench rows: cluster " + key + " was not loaded before the rows were served");
  auto c = std::make_unique<topology::Cluster>(std::move(cfg), catalog_);
  return *clusters_.emplace(key, std::move(c)).first->second;
}

void record_served(const ServeResult& s, const std::string& device, const model::Model& m, bool overlap_scheduling,
                   RowPrediction& out) {
  out.ttft_s = s.ttft_s.mean;
  out.tpot_s = s.tpot_s.mean;
  out.ttft_parts = s.ttft_parts;
  out.tpot_parts = s.tpot_parts;
  out.device = device;
  out.model_params = m.params_total();
  out.overlap_scheduling = overlap_scheduling;
  out.predicted = true;
}

void check_concurrency(const BenchRow& r, const std::string& product) {
  if (r.concurrency_unnamed)
    throw Rejected{
        "concurrency not recorded: the id leaves it empty (\"_c_\") and silicon_data_source has no "
        "silicon_concurrency, and batch_size is no stand-in for it (docs/FIDELITY.md, session 26)"};
  if (!r.batch_fractional.empty() && r.recorded_concurrency == 0)
    throw Rejected{r.batch_fractional +
                   " is not a whole number of sequences and the run's concurrency is not recorded"};
  if (r.recorded_concurrency > 0 && r.recorded_concurrency != r.concurrency())
    throw Rejected{"inconsistent concurrency: silicon_data_source records silicon_concurrency=" +
                   std::to_string(r.recorded_concurrency) + ", " + product + " is " + std::to_string(r.concurrency())};
}

BenchPool layout_of(const BenchRow& r) {
  BenchPool l;
  l.tp = r.tp, l.pp = r.pp, l.attention_dp = r.attention_dp, l.moe_tp = r.moe_tp, l.moe_ep = r.moe_ep;
  l.batch_size = r.batch_size;
  l.workers = 1;
  return l;
}

plan::Plan plan_of(const BenchRow& r, const BenchPool& layout, int64_t batch, const model::Model& m,
                   const topology::Cluster& c) {
  plan::Plan p;
  p.model = m.config.source;
  p.cluster = c.name();
  const BenchPool& l = layout;
  p.pp = static_cast<int>(l.pp);
  p.attention = {static_cast<int>(l.tp), static_cast<int>(l.attention_dp)};
  const int64_t ranks = l.tp * l.attention_dp;
  if (m.config.is_moe()) {
    if (ranks % (l.moe_tp * l.moe_ep) != 0)
      throw Rejected{"inconsistent layout: moe_tp x moe_ep = " + std::to_string(l.moe_tp * l.moe_ep) +
                     " does not divide tp x attention_dp = " + std::to_string(ranks)};
    p.moe = {static_cast<int>(l.moe_tp), static_cast<int>(l.moe_ep), static_cast<int>(ranks / (l.moe_tp * l.moe_ep))};
  } else {
    p.moe = {1, 1, static_cast<int>(ranks)};
  }
  p.dtypes.attention = p.dtypes.dense_mlp = precision(r.gemm_quant, m, "gemm_quant_mode");
  p.dtypes.experts = m.config.is_moe() ? precision(r.moe_quant, m, "moe_quant_mode") : p.dtypes.dense_mlp;
  p.dtypes.kv_cache = kv_dtype_of(r);
  p.workload.batch = batch;
  p.workload.input_len = r.isl;
  p.workload.output_len = r.osl;
  try {
    plan::validate_plan(p, m, c.num_devices(), "the row's layout");
  } catch (const std::exception& e) {
    throw Rejected{std::string("inconsistent layout: ") + e.what()};
  }
  try {
    simulate::validate_plan_precisions(p, c.device_spec(), "the row's precisions");
  } catch (const std::exception& e) {
    throw Rejected{std::string("unsupported precision: ") + e.what()};
  }
  return p;
}

}  // namespace dayzero::serve::detail
