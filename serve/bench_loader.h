#pragma once
// Internal to serve/: what predicting measured rows needs beside the simulation — the
// bundled models and the GPU systems' clusters loaded once for all rows, a row's
// precisions and layout as a Plan, and the rejection of a row that cannot be mapped.

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "model/model.h"
#include "plan/plan.h"
#include "serve/bench_predict.h"
#include "serve/bench_rows.h"
#include "serve/srt_slurm_recipes.h"
#include "topology/cluster.h"
#include "topology/device.h"

namespace dayzero::serve::detail {

inline int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// A row that cannot be predicted: the reason is the rejection.
struct Rejected {
  std::string reason;
};

// Models, clusters and their simulators, loaded once for all rows.
class Loader {
 public:
  explicit Loader(const BenchOptions& o);
  // Rejected when the model is not bundled.
  const model::Model& model(const std::string& hf_id);
  // The system's cluster with enough nodes for `gpus`.
  const topology::Cluster& cluster(const std::string& system, int64_t gpus);
  const simulate::EfficiencyTable& efficiency() const { return o_.efficiency; }
  // srt-slurm's disaggregated recipes (scenarios/fidelity/srt-slurm-recipes.csv).
  const std::vector<SrtSlurmRecipe>& srt_slurm() const { return srt_slurm_; }
  // From now on the loader is only read (from several threads): loading more is a bug.
  void freeze() { frozen_ = true; }

 private:
  const BenchOptions& o_;
  topology::DeviceCatalog catalog_;
  std::map<std::string, std::string> models_, systems_;
  std::map<std::string, std::unique_ptr<model::Model>> loaded_models_;
  std::map<std::string, std::unique_ptr<topology::Cluster>> clusters_;
  std::vector<SrtSlurmRecipe> srt_slurm_;
  bool frozen_ = false;
};

// The plan of one worker of the row: `layout`'s parallel sizes, the row's precisions
// and lengths, `batch` sequences in flight; Rejected when the layout or a precision
// does not fit the model or the GPU.
plan::Plan plan_of(const BenchRow& r, const BenchPool& layout, int64_t batch, const model::Model& m,
                   const topology::Cluster& c);
// The row's own layout (an aggregated worker) as a pool.
BenchPool layout_of(const BenchRow& r);

// Whether the row's FP8 weights, converted from a 16-bit checkpoint, carry one scale per
// tensor: aiconfigurator's quantization modes (GEMMQuantMode / MoEQuantMode,
// aic-core/src/aiconfigurator_core/sdk/common.py, 095f58a) name per-tensor FP8 `fp8`
// ("w8fp8"), `fp8_static` or `fp8_ootb`, and 128 x 128 blocks `fp8_block`; a
// checkpoint stored in FP8 is served with its own scales.
bool per_tensor_fp8(const BenchRow& r, const model::Model& m);

// The row's engine profile with what its FP8 weights' scales change: a per-tensor FP8
// row's activations are not quantized per 128-column group, so no block-FP8
// quantization kernels (EngineProfile::separate_activation_quant).
void apply_fp8_scales(const BenchRow& r, const model::Model& m, EngineProfile& p);

// The benchmark client of a measured run (bench_predict.cpp): a closed loop at its
// concurrency (or Poisson at its rate), with the requests and length draws of whoever
// deployed it.
Client bench_client(const BenchRow& r, const BenchOptions& o);

// A served row's figures into its prediction: the means and their parts, the GPU, the
// model's size and whether the engine overlapped its host time.
void record_served(const ServeResult& s, const std::string& device, const model::Model& m, bool overlap_scheduling,
                   RowPrediction& out);

// Rejected when the client's concurrency is unknown (the id leaves it empty and no tool
// recorded it) or when the recorded one disagrees with concurrency(); `product` says
// what concurrency() multiplies ("batch_size x pp_size x attention_dp_size").
void check_concurrency(const BenchRow& r, const std::string& product);

// A `disagg` row served by the disaggregated simulation (bench_predict_disagg.cpp):
// fills `out`, or throws Rejected.
void predict_disaggregated(const BenchRow& r, Loader& loader, const BenchOptions& o, RowPrediction& out);

}  // namespace dayzero::serve::detail
