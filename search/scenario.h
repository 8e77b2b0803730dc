#pragma once
// A scenario: the question `dayzero plan` answers. The model (a config.json or
// model directory relative to the scenario file, or an inline config), the
// cluster, the workload, the SLA, the objective, and optional limits of the
// search space. DayZero's own format: unknown keys are errors.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/model.h"
#include "plan/engine_settings.h"
#include "plan/plan.h"
#include "plan/speculative.h"
#include "topology/cluster.h"

namespace dayzero::search {

inline constexpr int kScenarioSchemaVersion = 1;

enum class Objective { throughput_per_device, latency, fewest_devices };
std::string_view objective_name(Objective o);

// How the search converts a model's weights (apply_weight_choice in search.h): as
// the checkpoint stores them; every projection matrix at BF16, FP8, INT8 (W8A8),
// INT8 weight-only (W8A16), INT4 (W4A16) or NVFP4 (W4A4) (model::WeightPrecision;
// embeddings and head stay 16-bit under the integer and FP4 choices); or only the
// routed experts at INT4.
enum class WeightChoice { checkpoint, bf16, fp8, int8, int8_w8a16, int4, nvfp4, experts_int4 };
inline constexpr WeightChoice kAllWeightChoices[] = {
    WeightChoice::checkpoint, WeightChoice::bf16, WeightChoice::fp8,   WeightChoice::int8,
    WeightChoice::int8_w8a16, WeightChoice::int4, WeightChoice::nvfp4, WeightChoice::experts_int4};
// "checkpoint", "bf16", "fp8", "int8", "int8_w8a16", "int4", "nvfp4", "experts-int4"
std::string_view weight_choice_name(WeightChoice w);
std::optional<WeightChoice> parse_weight_choice(std::string_view s);

// Decoder layers per pipeline stage: as even as possible (the remainder on the first
// stages; vLLM's and SGLang's default), or balanced by weight bytes (the embedding
// and the LM head count on the first and last stages, so those stages take fewer
// layers; vLLM's VLLM_PP_LAYER_PARTITION environment variable sets such a split).
enum class StageSplit { even, balanced };
inline constexpr StageSplit kAllStageSplits[] = {StageSplit::even, StageSplit::balanced};
std::string_view stage_split_name(StageSplit s);  // "even" | "balanced"
std::optional<StageSplit> parse_stage_split(std::string_view s);

// How wide the search space is (SpaceOverrides::kind).
enum class SpaceKind { compact, full };
std::string_view space_kind_name(SpaceKind k);  // "compact" | "full"

struct Sla {
  double max_ttft_s = 0;  // 0 = no limit
  double max_tpot_s = 0;
};

// Limits of the search space; empty lists mean "every valid value".
struct SpaceOverrides {
  std::vector<int> device_counts;
  std::vector<int> tp, pp, ep;
  std::vector<int> moe_dp;        // copies of the expert set per stage
  std::vector<int> draft_tokens;  // speculative drafts to try (0 = plain decoding; needs "speculative")
  // Redundant expert slots per EP rank to try (plan::MoeLayout::redundant_experts / ep;
  // 0 = none). Default: none in the compact space; none and one in the full space, as
  // DeepSeek-V3's deployment hosts one redundant expert per GPU (report sec. 3.4).
  std::vector<int> redundant_per_rank;
  // How a pipeline's decoder layers are split over its stages (space.h: StageSplit).
  std::vector<StageSplit> stage_splits;
  // full (the default): every divisor size (3 or 6 GPUs per replica), every moe_dp,
  // even and balanced stages, batches in half steps. compact (the default with
  // disaggregated pools: every fitting plan is costed to be paired, so the full space
  // costs 5-30x the time; on the four bundled pool scenarios it found the same best
  // plans): power-of-two sizes (and the whole cluster), one copy of the experts per
  // stage unless moe_dp lists more, even stages unless stage_splits lists more,
  // batches in powers of two.
  SpaceKind kind = SpaceKind::full;
  // Default: the checkpoint's precision, and for a 16-bit checkpoint FP8 on a
  // device with FP8, else INT8 (W8A8) on a device with INT8 (A100). The others
  // (int8_w8a16, int4, nvfp4, experts-int4, bf16) are opt-in; int8 and nvfp4 need
  // the device's INT8 / FP4 tensor cores (an InputError names this field if not).
  std::vector<WeightChoice> weight_dtypes;
  std::vector<plan::KvDtype> kv_dtypes;
  std::vector<int64_t> batches;                   // concurrent sequences
  std::vector<double> resident_expert_fractions;  // 1 = all resident
  // Prefill tokens per step of a replica to try (plan::Plan::prefill_chunk_tokens:
  // vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM
  // --max_num_tokens): a smaller budget holds less activation memory and takes more
  // steps per prompt. Default: one, the scenario's engine.token_budget, else the
  // plan's 8192.
  std::vector<int64_t> token_budgets;
  bool tp_within_node = true;  // keep TP groups inside a node
  // Also consider disaggregated deployments (search/disaggregated.h): a prefill pool
  // and a decode pool, each of the space's layouts, in every worker count the cluster
  // holds, against the single pools.
  bool disaggregated = false;
  int top = 10;  // plans in the table
};

// The most entries a scenario's search list (batches, tp, ...) may hold.
inline constexpr size_t kMaxSpaceListEntries = 1024;

struct Scenario {
  std::string name;
  std::string description;
  std::filesystem::path file;          // where it was read from
  std::filesystem::path model_path;    // resolved (empty when inline)
  std::string inline_config;           // config.json text given inline under "model"
  std::filesystem::path cluster_path;  // resolved
  plan::Workload workload;             // batch = the most concurrent sequences to consider
  double request_rate_per_s = 0;       // alternative to a fixed concurrency (0 = not given)
  Sla sla;
  Objective objective = Objective::throughput_per_device;
  SpaceOverrides space;
  // The serving engine and its settings over the engine's defaults (`serve` and
  // `plan --serve-check`; their flags win): the optional "engine" object,
  // plan/engine_settings.h.
  plan::EngineSettings engine;
  // Speculative decoding every plan of the scenario runs with (plan/speculative.h):
  // the optional "speculative" object.
  plan::SpeculativeDecoding speculative;
};

// A scenario argument: an existing path, else the name of a bundled scenario
// (data_dir/NAME.json); unresolved names are returned as given for the loader to report.
std::filesystem::path resolve_scenario(const std::string& arg, const std::filesystem::path& data_dir);

// Reads a scenario file; model and cluster paths are resolved against its folder.
Scenario load_scenario(const std::filesystem::path& file);
// The same from a parsed file read from `file` (which resolves the relative paths it
// names and names it in errors).
Scenario scenario_from_json(const nlohmann::json& j, const std::filesystem::path& file);

// The model and cluster a scenario names, loaded (cluster devices from the
// catalog in data_dir plus the scenario's own).
model::Model load_scenario_model(const Scenario& s);

}  // namespace dayzero::search
