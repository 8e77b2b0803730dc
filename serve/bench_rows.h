#pragma once
// Measured serving benchmarks, one row per run: the CSV format of the public
// `silicon_sample.csv` of ai-dynamo/aiconfigurator (columns: scenarios/fidelity/README.md).
// Each row names the engine, the model, the GPU, the precisions, the workload
// (input and output lengths, concurrency) and one worker's layout, with the
// measured mean TTFT and TPOT. The result files of `vllm bench serve` and
// `sglang.bench_serving` become the same rows (serve/bench_results.h).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "topology/cluster_config.h"

namespace dayzero::serve {

// Bounds on a measured run, checked by both readers (the CSV and the clients' result
// files) so that concurrency(), gpus() and the plan and client built from a row stay far
// inside 64 bits (at most 2^54 and 2^42); the plan's own checks then refuse what no
// cluster or plan holds.
// A layout size (tp, pp, attention_dp, moe_tp, moe_ep): the most devices a cluster has.
inline constexpr int64_t kMaxBenchLayoutSize = topology::kMaxDevices;
// Concurrent requests (batch_size, a client's max_concurrency): a plan's largest batch.
inline constexpr int64_t kMaxBenchConcurrency = plan::kMaxBatch;
// Mean prompt or output tokens of a request: a plan's longest sequence.
inline constexpr int64_t kMaxBenchTokens = plan::kMaxSequenceTokens;
// Requests a client sent or completed: 2^40, 10^5 times the 10 million `serve` accepts.
inline constexpr int64_t kMaxBenchRequests = int64_t{1} << 40;

// Who deployed a measured run, which decides the engine flags it ran with
// (docs/ENGINE_DEFAULTS.md, "How the measured runs were deployed").
enum class Deployer {
  generator,     // aiconfigurator's config generator, and any row not marked otherwise
  gap_analysis,  // aiconfigurator's gap-analysis harness (`source_file=.../aic-auto-gap-analysis/...`):
                 // the generator's flags, but SGLang with its own prefill limits
  inferencex,    // InferenceX's benchmark recipes: silicon_data_source names a database dump
                 // (`db-dump/...`) or a dated results export (`source_file=YYYY-MM-DD.csv`)
};

// One pool of a disaggregated run: its workers' layout, sequences per worker replica
// and how many workers (0: not given).
struct BenchPool {
  int64_t batch_size = 0, workers = 0;
  int64_t tp = 1, pp = 1, attention_dp = 1, moe_tp = 1, moe_ep = 1;
  int64_t gpus() const { return tp * pp * attention_dp; }
};

struct BenchRow {
  std::string id;
  std::string file;
  int64_t line = 0;  // in `file`, for messages
  std::string backend, backend_version, model_path, system, mode;
  std::string gemm_quant, moe_quant;  // "", "fp8", "fp8_block", "nvfp4", "int4_wo"
  int64_t isl = 0, osl = 0;
  int64_t batch_size = 0;  // concurrency per attention-DP rank (and per pipeline stage)
  int64_t tp = 1, pp = 1, attention_dp = 1, moe_tp = 1, moe_ep = 1;
  double ttft_s = 0, tpot_s = 0;  // measured means
  // The client: 0 = a closed loop at concurrency(); else Poisson arrivals at this rate
  // (open loop), at most concurrency() in flight. The CSV rows are closed loops.
  double request_rate_per_s = 0;
  int64_t requests = 0;  // requests the client sent; 0 = not given (the CSV)
  // Measured percentiles where the file has them; 0 = not given (the CSV).
  double ttft_p50_s = 0, ttft_p99_s = 0, tpot_p50_s = 0, tpot_p99_s = 0;
  // The concurrency the benchmark tool recorded (the CSV's silicon_data_source,
  // "silicon_concurrency=N"); 0 = not recorded. A row where it disagrees with
  // concurrency() is rejected: its layout or batch is mislabelled.
  int64_t recorded_concurrency = 0;
  // The id names the run's concurrency as "<isl>x<osl>_c<N>_" (the CSV's naming); true when
  // that field is there and empty and silicon_data_source records none either: the client's
  // concurrency is unknown, and the row is rejected rather than read as batch_size (the
  // same pipeline's runs that name it kept 2 to 32 times batch_size in flight).
  bool concurrency_unnamed = false;
  // A batch size the row wrote that is not a whole number ("decode_batch_size 1.22"; the
  // batch is then rounded up): the client's concurrency is the recorded one, and without
  // a recorded one the row is rejected. "" when every batch is whole.
  std::string batch_fractional;
  // Why the run has no measurement to check ("silicon_ttft_ms is empty"): it is rejected
  // with that. "" for a measured run.
  std::string unmeasured;
  Deployer deployer = Deployer::generator;
  std::string measured_date;  // YYYY-MM-DD from silicon_data_source's "measured=", or ""
  // The engine's container image from silicon_data_source's "image=" ("#" read as "/"), or
  // "": which of InferenceX's recipes ran (its MTP recipes use images its others do not).
  std::string image;
  // The run is in InferenceX's database dump ("db-dump/..."): this row, or the same
  // measurement filed there beside this export's copy (read_bench_csv marks both). The
  // dump holds no run of an MTP recipe (none of the 130 export rows of the MTP recipes'
  // own images, TensorRT-LLM 1.2.0rc6.post3 and Qwen3.5's sglang:v0.5.9-cu130, is in it),
  // which tells a plain recipe's run from its MTP twin where both ran on one image.
  bool in_database_dump = false;
  // InferenceX's rows whose layout is not the one their engine ran (serve/inferencex_layouts.h):
  // what the row wrote, where the layout above was read back to the engine's; and why the
  // engine's layout cannot be told, where it cannot (the row is then rejected with it).
  std::string layout_note, layout_unknown;
  // `disagg` rows: the prefill and the decode pool (the prefill_* and decode_* columns).
  BenchPool prefill, decode;
  bool disaggregated() const { return mode == "disagg"; }
  // Requests the benchmark client keeps in flight: batch_size x pp x attention_dp, or
  // for a disaggregated run the decode pool's (decode_batch_size x decode pp x decode
  // attention_dp x decode workers).
  int64_t concurrency() const {
    if (!batch_fractional.empty() && recorded_concurrency > 0) return recorded_concurrency;
    return disaggregated() ? decode.batch_size * decode.pp * decode.attention_dp * decode.workers
                           : batch_size * pp * attention_dp;
  }
  int64_t gpus() const {
    return disaggregated() ? prefill.workers * prefill.gpus() + decode.workers * decode.gpus() : tp * pp * attention_dp;
  }
};

// Whether a gemm_quant_mode / moe_quant_mode names FP8 weights and activations: per
// tensor (`fp8`, aiconfigurator's `fp8_static` and `fp8_ootb`) or 128 x 128 blocks.
bool is_fp8_quant_mode(const std::string& mode);

// Every row of the file. A missing column, a malformed or negative number, or a
// row with another number of fields is a core::InputError naming the file, the row
// (its id and line) and the field. `agg` rows must give a positive batch and layout;
// `disagg` rows read their pools from the prefill_* and decode_* columns where the
// file has them (empty: not given, the row is rejected when predicted).
std::vector<BenchRow> read_bench_csv(const std::filesystem::path& file);
// The same from the file's text; `file` names it in errors and in each row.
std::vector<BenchRow> parse_bench_csv(const std::string& text, const std::string& file);

// Rows that record one measurement under two layouts: the same GPU, engine and version,
// lengths and concurrency, and exactly the same TTFT and TPOT, labelled with different
// parallel layouts or quantizations (the public CSV has 82: the same Qwen3.5-397B run
// filed as TP 16 and as TP 4 EP 4, and so on). At most one label is true and the rows do
// not say which, so all of them are refused. Rows that repeat another under the same
// layout too are one run imported twice (the public CSV holds three dumps of the
// publisher's data: 219 repeats under one model name among the rows predicted before
// 2026-12-04, and 327 runs of InferenceX's DeepSeek-R1 recipes that its database dump
// files as deepseek-ai/DeepSeek-V3 beside the same run filed as DeepSeek-R1, e.g.
// `dsr1_b200_sglang_fp4_agg_1024x1024_c4_cfg88` (V3) and
// `2026_04_06_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c4_tp4_ep1_38` (R1), so the
// model name is not part of what makes two rows one measurement): one is kept (the first
// that names its concurrency and records its container image) and the others refused, so
// that each run weighs once in the fit and the medians. Returns, per row, the reason
// (empty for a row kept).
std::vector<std::string> conflicting_layouts(const std::vector<BenchRow>& rows);

}  // namespace dayzero::serve
