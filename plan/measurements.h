#pragma once
// Measurements: what `dayzero run` measured, as every part reads it — the
// executor writes it, calibration and the GUI read it back (DESIGN's closed
// loop: Plan -> run -> Measurements -> calibration -> prediction). A plain value
// type with its JSON beside it (schema versioned, written atomically).
//
// One file describes a whole run: the sequences' prompts and generated tokens,
// step times (the slowest rank's), each rank's memory, and every rank's per-op and
// per-collective timings (each entry names its rank). Times are timed as
// nccl-tests does: one untimed warm-up, then N timed iterations, mean and min.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "plan/fp8_block_gemm.h"
#include "plan/plan.h"

namespace dayzero::plan {

inline constexpr int kMeasurementsSchemaVersion = 2;

// One distinct (rank, phase, op, variant, shape) the forward ran, and its timing.
struct OpMeasurement {
  int rank = 0;
  std::string phase;           // "prefill" | "decode"
  std::string name;            // op inventory name, e.g. "q_proj", "experts.down_proj"
  std::string kind;            // model::op_kind_name
  std::string variant;         // kernel variant, e.g. "f32", "gqa+sinks"
  std::vector<int64_t> shape;  // [tokens, k]; attention [tokens, context]; expert_gemm [rows, k] of one expert
  int64_t calls = 0;           // times the forward ran it with this key (layers, experts, steps)
  int iterations = 0;          // timed iterations (after one untimed warm-up)
  double mean_s = 0, min_s = 0;
  // The host's wall seconds in the op's real calls, summed over `calls`: launches, uploads
  // and whatever wait for the device the op makes (timed repeats not counted). Beside a
  // step's time, where its host time goes. 0 in runs before 2026-12-04.
  double host_s = 0;
  int64_t flops = 0, bytes = 0;  // one call, from the backend's cost function
  double gflops() const { return min_s > 0 ? static_cast<double>(flops) / min_s / 1e9 : 0; }
  double gbps() const { return min_s > 0 ? static_cast<double>(bytes) / min_s / 1e9 : 0; }
};

// One distinct (rank, collective, group size, size_bytes), timed on a scratch
// buffer after the first real call (the warm-up). Sizes as nccl-tests reports
// them: all_reduce the buffer, all_gather the gathered output, reduce_scatter the
// full input, alltoall the rank's send buffer, sendrecv the message.
struct CollectiveMeasurement {
  int rank = 0;
  core::Collective collective = core::Collective::all_reduce;
  int ranks = 0;  // the group's size
  int64_t size_bytes = 0;
  int64_t calls = 0;   // real calls with this key
  int iterations = 0;  // timed repeats
  double mean_s = 0, min_s = 0;
  double algbw_GBps() const { return min_s > 0 ? static_cast<double>(size_bytes) / min_s / 1e9 : 0; }
  double busbw_GBps() const { return algbw_GBps() * core::bus_factor(collective, ranks); }
};

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;   // /proc/cpuinfo "model name"
  int cores = 0;           // hardware threads
  int kernel_threads = 0;  // threads each rank's kernels used
};

// A rank's memory in the simulator's categories (simulate/prediction.h RankMemory),
// so that `validate` sets the two side by side.
struct MemoryUse {
  int64_t weights_bytes = 0;      // read from the checkpoint (the rank's shards, unsplit tensors),
                                  // converted to the plan's dtypes, + float32 copies
  int64_t kv_bytes = 0;           // paged KV cache blocks allocated (and linear-attention states)
  int64_t workspace_bytes = 0;    // activations and workspace: the most tensor bytes a step held at once
                                  // above what was live before it (executor/tensor.h TensorPeakScope)
  int64_t comm_buffer_bytes = 0;  // what joining the communicator groups added to the resident set
  int64_t runtime_bytes = 0;      // the process's resident set before the run's own work
  int64_t peak_bytes() const { return weights_bytes + kv_bytes + workspace_bytes + comm_buffer_bytes + runtime_bytes; }
  int64_t rss_hwm_bytes = 0;  // what the OS saw (includes the mapped pages touched)
  // A device backend's (0 on the CPU): the most its memory pool held at once (the run's
  // weights on the device and each kernel's buffers), and what the device had in use
  // at the run's end (cudaMemGetInfo: every process's, the CUDA context's included).
  int64_t device_pool_peak_bytes = 0;
  int64_t device_used_bytes = 0;
  // Of the pool, by the simulator's categories: the run's weights on the device (weights),
  // and the most the kernels' inputs, outputs and workspace held at once (activations and
  // workspace). Stage 1 keeps the KV cache on the host: none of it is on the device.
  int64_t device_weights_bytes = 0;
  int64_t device_workspace_peak_bytes = 0;
  // The most the KV cache's pools held on the device (a device backend's stores; 0 where
  // the cache is the host's, and in runs before 2026-12-04).
  int64_t device_kv_bytes = 0;
  // At the run's end: the freed kernel buffers the pool keeps for reuse, and what the
  // device had in use beyond the pool's live and cached blocks (the CUDA context, the
  // libraries' kernels and handles: the runtime on the device). 0 in runs before 2026-12-04.
  int64_t device_cached_bytes = 0;
  int64_t device_runtime_bytes = 0;
  // The categories as the device holds them, for a device run: the weights and kernels'
  // buffers from the pool, the runtime from the device (device_runtime_bytes; in runs
  // without it, in use less the weights), and the KV cache, communication buffers as
  // counted by the executor (the KV cache: its blocks, or the device's pools where
  // device_kv_bytes says what they held).
  bool on_device() const { return device_pool_peak_bytes > 0; }
  int64_t device_runtime_or_estimate() const {
    return device_runtime_bytes > 0 ? device_runtime_bytes
                                    : std::max<int64_t>(0, device_used_bytes - device_weights_bytes);
  }
};

// The run's logits against the full-precision run of the same weights and prompts
// (`dayzero run --check-precision`): teacher-forced rows (every prompt position, and
// each decode step while both runs' greedy tokens agree).
struct PrecisionCheck {
  std::string reference;  // what the reference ran, e.g. "weights as the checkpoint stores them, fp32 KV cache"
  std::string candidate;  // the plan's dtypes, e.g. "attention fp8, ..., KV cache fp8"
  int64_t rows = 0, top1_agreeing_rows = 0, decode_rows_skipped = 0;
  double kl_mean_nats = 0, kl_max_nats = 0, max_abs_logit_diff = 0;
  int64_t sequences = 0, sequences_tokens_equal = 0;
};

// One rank's place in the plan and its own step times and memory.
struct RankMeasurements {
  int rank = 0;
  int stage = 0, attn_tp = 0, attn_dp = 0, ep = 0;  // Plan rank arithmetic
  std::vector<int64_t> sequences;                   // the sequences (indices into prompts) its replica served
  double load_s = 0;  // opening, paging in and sharding its weights, and placing them on a device (not in the steps)
  double prefill_s = 0;
  std::vector<double> decode_step_s;
  MemoryUse memory;
};

// What times an op's repeats: the host's steady clock around the kernel call, or the
// device's (CUDA events around the backend's launches: host staging left out).
enum class OpClock { host, device };

struct Measurements {
  int schema_version = kMeasurementsSchemaVersion;
  std::string model;            // config source
  std::string weights;          // weights directory
  std::string backend = "cpu";  // the executor backend that ran it (kernels and their compute dtype)
  int world_size = 1;
  std::vector<std::vector<int64_t>> prompts;  // per sequence
  std::vector<std::vector<int64_t>> tokens;   // generated, per sequence
  double prefill_s = 0;                       // the slowest rank's
  std::vector<double> decode_step_s;          // per step, the slowest rank's
  std::vector<RankMeasurements> ranks;        // by rank
  Plan plan;
  MachineInfo machine;
  int timing_iterations = 0;                         // timed repeats per op (after one untimed warm-up)
  OpClock op_clock = OpClock::host;                  // what timed the ops' repeats
  Fp8BlockGemm fp8_block_gemm = Fp8BlockGemm::bf16;  // w8a8 only where every rank ran it
  // Why W8A8 was asked for and not run (cuBLASLt's refusal), or empty.
  std::string fp8_block_gemm_note;
  std::vector<OpMeasurement> ops;                  // every rank's
  std::vector<CollectiveMeasurement> collectives;  // every rank's; none on one rank
  std::optional<PrecisionCheck> precision_check;   // with --check-precision

  double decode_step_mean_s() const;
  int64_t peak_bytes() const;  // the fullest rank's
};

// Joins the per-rank Measurements of one run (each with one entry in `ranks`)
// into the run's: ranks in order, step times the slowest rank's, ops and
// collectives concatenated; sequences and tokens from every rank (they must
// agree where two ranks know the same sequence). Throws std::runtime_error.
Measurements merge_rank_measurements(const std::vector<Measurements>& per_rank);

nlohmann::json measurements_to_json(const Measurements& m);
nlohmann::json collective_to_json(const CollectiveMeasurement& c);  // one entry of "collectives"
// Strict: unknown or missing fields are core::InputError naming `source` and the field.
Measurements measurements_from_json(const nlohmann::json& j, const std::string& source);
Measurements load_measurements(const std::filesystem::path& file);
// Writes via a temporary file in the same directory and a rename.
void save_measurements(const std::filesystem::path& file, const Measurements& m);

}  // namespace dayzero::plan
