// Measurements <-> JSON (schema 2), atomic writes (the value's own functions and the
// merge of a run's ranks: measurements.cpp).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "plan/measurements.h"
#include "plan/plan_json.h"

namespace dayzero::plan {

using core::Fields;
using nlohmann::json;

namespace {

// Fields kept in an int (ranks, counts, iterations): read at most int's largest, so the
// narrowing keeps the value (world_size 2^32 + 1 read as 1, before).
constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
// A rank's memory figures: 1 EiB each, so that MemoryUse::peak_bytes(), their sum, stays
// inside 64 bits (weights_bytes 2^63 - 1 overflowed it, before).
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 60;

}  // namespace

json collective_to_json(const CollectiveMeasurement& c) {
  return {{"rank", c.rank},
          {"collective", std::string(core::collective_name(c.collective))},
          {"ranks", c.ranks},
          {"size_bytes", c.size_bytes},
          {"calls", c.calls},
          {"warmup_iterations", c.iterations > 0 ? 1 : 0},
          {"iterations", c.iterations},
          {"mean_s", c.mean_s},
          {"min_s", c.min_s},
          {"bus_factor", core::bus_factor(c.collective, c.ranks)},
          {"algbw_GBps", c.algbw_GBps()},
          {"busbw_GBps", c.busbw_GBps()}};
}

namespace {
json precision_to_json(const PrecisionCheck& c) {
  return {
      {"reference", c.reference},
      {"candidate", c.candidate},
      {"rows", c.rows},
      {"top1_agreeing_rows", c.top1_agreeing_rows},
      {"top1_agreement", c.rows > 0 ? static_cast<double>(c.top1_agreeing_rows) / static_cast<double>(c.rows) : 0.0},
      {"decode_rows_skipped", c.decode_rows_skipped},
      {"kl_mean_nats", c.kl_mean_nats},
      {"kl_max_nats", c.kl_max_nats},
      {"max_abs_logit_diff", c.max_abs_logit_diff},
      {"sequences", c.sequences},
      {"sequences_tokens_equal", c.sequences_tokens_equal}};
}

json memory_to_json(const MemoryUse& m) {
  json j = {{"weights_bytes", m.weights_bytes},     {"kv_bytes", m.kv_bytes},
            {"workspace_bytes", m.workspace_bytes}, {"comm_buffer_bytes", m.comm_buffer_bytes},
            {"runtime_bytes", m.runtime_bytes},     {"peak_bytes", m.peak_bytes()},
            {"rss_hwm_bytes", m.rss_hwm_bytes}};
  if (m.device_pool_peak_bytes > 0 || m.device_used_bytes > 0) {  // a device backend's run
    j["device_pool_peak_bytes"] = m.device_pool_peak_bytes;
    j["device_used_bytes"] = m.device_used_bytes;
    j["device_weights_bytes"] = m.device_weights_bytes;
    j["device_workspace_peak_bytes"] = m.device_workspace_peak_bytes;
    j["device_kv_bytes"] = m.device_kv_bytes;
    j["device_cached_bytes"] = m.device_cached_bytes;
    j["device_runtime_bytes"] = m.device_runtime_bytes;
  }
  return j;
}

json op_to_json(const OpMeasurement& o) {
  return {{"rank", o.rank},
          {"phase", o.phase},
          {"name", o.name},
          {"kind", o.kind},
          {"variant", o.variant},
          {"shape", o.shape},
          {"calls", o.calls},
          {"warmup_iterations", o.iterations > 0 ? 1 : 0},
          {"iterations", o.iterations},
          {"mean_s", o.mean_s},
          {"min_s", o.min_s},
          {"host_s", o.host_s},
          {"flops", o.flops},
          {"bytes", o.bytes},
          {"gflops_per_s", o.gflops()},
          {"gbytes_per_s", o.gbps()}};
}

// Keys a reader skips: values derived from the others, and prose.
void allow(Fields& f, std::initializer_list<const char*> derived) {
  for (const char* k : derived) f.skip(k);
}
const json& object(Fields& f, const std::string& key) {
  const json* o = f.opt_object(key);
  if (!o) f.fail(key, "missing (an object)");
  return *o;
}
const json& array(const json& j, Fields& f, const std::string& key) {
  if (!f.has(key) || !j.at(key).is_array()) f.fail(key, "missing or not an array");
  f.skip(key);  // read here
  return j.at(key);
}
double req_double(const json& j, Fields& f, const std::string& key) {
  if (!f.has(key)) f.fail(key, "missing");
  const double v = f.opt_double(key, 0);
  if (!(v >= 0)) f.fail_value(key, j.at(key).dump(), "must be a non-negative number");
  return v;
}
std::vector<std::vector<int64_t>> int_lists(const json& j, Fields& f, const std::string& key) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& row : array(j, f, key)) {
    if (!row.is_array()) f.fail_value(key, row.dump(), "must be a list of token lists");
    auto& v = out.emplace_back();
    for (const auto& t : row) {
      if (!t.is_number_integer()) f.fail_value(key, t.dump(), "token ids are integers");
      v.push_back(t.get<int64_t>());
    }
  }
  return out;
}
MemoryUse memory_from_json(const json& j, const std::string& file, const std::string& path) {
  Fields f(j, file, path);
  MemoryUse m;
  m.weights_bytes = f.req_int("weights_bytes", 0, kMaxMemoryBytes);
  m.kv_bytes = f.req_int("kv_bytes", 0, kMaxMemoryBytes);
  m.workspace_bytes = f.req_int("workspace_bytes", 0, kMaxMemoryBytes);
  m.comm_buffer_bytes = f.opt_int("comm_buffer_bytes", 0, 0, kMaxMemoryBytes);  // absent in runs before 2026-12
  m.runtime_bytes = f.opt_int("runtime_bytes", 0, 0, kMaxMemoryBytes);
  m.rss_hwm_bytes = f.opt_int("rss_hwm_bytes", 0, 0, kMaxMemoryBytes);
  m.device_pool_peak_bytes = f.opt_int("device_pool_peak_bytes", 0, 0, kMaxMemoryBytes);
  m.device_used_bytes = f.opt_int("device_used_bytes", 0, 0, kMaxMemoryBytes);
  m.device_weights_bytes = f.opt_int("device_weights_bytes", 0, 0, kMaxMemoryBytes);
  m.device_workspace_peak_bytes = f.opt_int("device_workspace_peak_bytes", 0, 0, kMaxMemoryBytes);
  m.device_kv_bytes = f.opt_int("device_kv_bytes", 0, 0, kMaxMemoryBytes);            // absent before 2026-12-04
  m.device_cached_bytes = f.opt_int("device_cached_bytes", 0, 0, kMaxMemoryBytes);    // absent before 2026-12-04
  m.device_runtime_bytes = f.opt_int("device_runtime_bytes", 0, 0, kMaxMemoryBytes);  // absent before 2026-12-04
  // Both are parts of the pool: neither can exceed its peak.
  if (m.device_weights_bytes > m.device_pool_peak_bytes)
    f.fail("device_weights_bytes", "exceeds device_pool_peak_bytes (" + std::to_string(m.device_pool_peak_bytes) +
                                       "): the weights on the device are part of the pool");
  if (m.device_workspace_peak_bytes > m.device_pool_peak_bytes)
    f.fail("device_workspace_peak_bytes", "exceeds device_pool_peak_bytes (" +
                                              std::to_string(m.device_pool_peak_bytes) +
                                              "): the kernels' buffers are part of the pool");
  if (m.device_kv_bytes > m.device_pool_peak_bytes)
    f.fail("device_kv_bytes", "exceeds device_pool_peak_bytes (" + std::to_string(m.device_pool_peak_bytes) +
                                  "): the KV cache's pools on the device are part of the pool");
  allow(f, {"peak_bytes"});
  f.reject_unknown();
  return m;
}
PrecisionCheck precision_from_json(const json& j, const std::string& file) {
  Fields f(j, file, "precision_check.");
  PrecisionCheck c;
  c.reference = f.opt_string("reference", "");
  c.candidate = f.opt_string("candidate", "");
  c.rows = f.req_int("rows", 0, kMaxInt);
  c.top1_agreeing_rows = f.req_int("top1_agreeing_rows", 0, c.rows);
  c.decode_rows_skipped = f.opt_int("decode_rows_skipped", 0, 0, kMaxInt);
  c.kl_mean_nats = req_double(j, f, "kl_mean_nats");
  c.kl_max_nats = req_double(j, f, "kl_max_nats");
  c.max_abs_logit_diff = req_double(j, f, "max_abs_logit_diff");
  c.sequences = f.req_int("sequences", 0, kMaxInt);
  c.sequences_tokens_equal = f.req_int("sequences_tokens_equal", 0, c.sequences);
  allow(f, {"top1_agreement"});
  f.reject_unknown();
  return c;
}

OpMeasurement op_from_json(const json& j, const std::string& file, size_t i) {
  Fields f(j, file, "ops[" + std::to_string(i) + "].");
  OpMeasurement o;
  o.rank = static_cast<int>(f.req_int("rank", 0, kMaxInt));
  o.phase = f.opt_string("phase", "");
  if (o.phase != "prefill" && o.phase != "decode") f.fail_value("phase", "\"" + o.phase + "\"", "prefill or decode");
  o.name = f.opt_string("name", "");
  o.kind = f.opt_string("kind", "");
  o.variant = f.opt_string("variant", "");
  o.shape = f.opt_ints("shape", 0);
  o.calls = f.req_int("calls", 0);
  o.iterations = static_cast<int>(f.req_int("iterations", 0, kMaxInt));
  o.mean_s = req_double(j, f, "mean_s");
  o.min_s = req_double(j, f, "min_s");
  o.host_s = f.opt_double("host_s", 0);
  if (!(o.host_s >= 0) || !std::isfinite(o.host_s)) f.fail_value("host_s", std::to_string(o.host_s), "seconds >= 0");
  o.flops = f.req_int("flops", 0);
  o.bytes = f.req_int("bytes", 0);
  if (o.name.empty() || o.kind.empty()) f.fail("name", "an op needs a name and a kind");
  allow(f, {"warmup_iterations", "gflops_per_s", "gbytes_per_s"});
  f.reject_unknown();
  return o;
}
CollectiveMeasurement collective_from_json(const json& j, const std::string& file, size_t i) {
  Fields f(j, file, "collectives[" + std::to_string(i) + "].");
  CollectiveMeasurement c;
  c.rank = static_cast<int>(f.req_int("rank", 0, kMaxInt));
  const std::string name = f.opt_string("collective", "");
  const auto collective = core::parse_collective(name);
  if (!collective)
    f.fail_value("collective", "\"" + name + "\"",
                 "all_reduce, all_gather, reduce_scatter, alltoall, broadcast or sendrecv");
  c.collective = *collective;
  c.ranks = static_cast<int>(f.req_int("ranks", 1, kMaxInt));
  c.size_bytes = f.req_int("size_bytes", 0);
  c.calls = f.req_int("calls", 0);
  c.iterations = static_cast<int>(f.req_int("iterations", 0, kMaxInt));
  c.mean_s = req_double(j, f, "mean_s");
  c.min_s = req_double(j, f, "min_s");
  allow(f, {"warmup_iterations", "bus_factor", "algbw_GBps", "busbw_GBps"});
  f.reject_unknown();
  return c;
}
}  // namespace

json measurements_to_json(const Measurements& m) {
  json ranks = json::array();
  for (const auto& r : m.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"stage", r.stage},
                     {"attn_tp", r.attn_tp},
                     {"attn_dp", r.attn_dp},
                     {"ep", r.ep},
                     {"sequences", r.sequences},
                     {"load_s", r.load_s},
                     {"prefill_s", r.prefill_s},
                     {"decode_step_s", r.decode_step_s},
                     {"memory", memory_to_json(r.memory)}});
  json ops = json::array(), collectives = json::array();
  for (const auto& o : m.ops) ops.push_back(op_to_json(o));
  for (const auto& c : m.collectives) collectives.push_back(collective_to_json(c));
  json out = {
      {"schema_version", m.schema_version},
      {"model", m.model},
      {"weights", m.weights},
      {"backend", m.backend},
      {"world_size", m.world_size},
      {"prompts", m.prompts},
      {"tokens", m.tokens},
      {"prefill_s", m.prefill_s},
      {"decode_step_s", m.decode_step_s},
      {"decode_step_mean_s", m.decode_step_mean_s()},
      {"peak_bytes", m.peak_bytes()},
      {"ranks", ranks},
      {"plan", plan_to_json(m.plan)},
      {"machine",
       {{"hostname", m.machine.hostname},
        {"cpu_model", m.machine.cpu_model},
        {"cores", m.machine.cores},
        {"kernel_threads", m.machine.kernel_threads}}},
      {"timing",
       {{"warmup_iterations", m.timing_iterations > 0 ? 1 : 0},
        {"iterations", m.timing_iterations},
        {"clock", m.op_clock == OpClock::device ? "device" : "host"},
        {"method",
         "per distinct (rank, phase, op, variant, shape): the real call is the untimed warm-up, then "
         "`iterations` timed repeats; mean and min; GFLOP/s and GB/s from min; collectives per distinct "
         "(rank, collective, ranks, size_bytes) the same way on a scratch buffer, algbw = size_bytes / "
         "min_s, busbw = algbw x bus_factor (nccl-tests doc/PERFORMANCE.md). Step times exclude the "
         "timed repeats; prefill_s and decode_step_s are the slowest rank's."}}},
      {"notes",
       "peak_bytes: weights + KV cache blocks + activations (a step's high-water mark of tensor bytes) + "
       "communication buffers + runtime, per "
       "rank (ranks[].memory) and the "
       "fullest rank's (top level). CPU backend: weights converted to the plan's bf16 or fp8 where it "
       "names them (other precisions as the checkpoint stores them), dequantized to float32 to multiply; "
       "KV cache in the plan's dtypes.kv_cache; activations float32"},
      {"ops", ops},
      {"collectives", collectives},
  };
  out["fp8_block_gemm"] = {{"path", m.fp8_block_gemm == Fp8BlockGemm::w8a8 ? "w8a8" : "bf16"}};
  if (!m.fp8_block_gemm_note.empty()) out["fp8_block_gemm"]["note"] = m.fp8_block_gemm_note;
  if (m.precision_check) out["precision_check"] = precision_to_json(*m.precision_check);
  return out;
}

Measurements measurements_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw core::InputError(source, "", "", "a Measurements file is a JSON object");
  Fields f(j, source);
  Measurements m;
  m.schema_version = static_cast<int>(f.req_int("schema_version", 1, kMaxInt));
  if (m.schema_version != kMeasurementsSchemaVersion)
    f.fail_value("schema_version", std::to_string(m.schema_version),
                 "this DayZero reads Measurements schema " + std::to_string(kMeasurementsSchemaVersion));
  m.model = f.opt_string("model", "");
  m.weights = f.opt_string("weights", "");
  m.backend = f.opt_string("backend", "cpu");
  m.world_size = static_cast<int>(f.req_int("world_size", 1, kMaxInt));
  m.prompts = int_lists(j, f, "prompts");
  m.tokens = int_lists(j, f, "tokens");
  if (m.tokens.size() != m.prompts.size())
    f.fail_value("tokens", std::to_string(m.tokens.size()) + " sequences",
                 "must match prompts (" + std::to_string(m.prompts.size()) + ")");
  m.prefill_s = req_double(j, f, "prefill_s");
  m.decode_step_s = f.opt_doubles("decode_step_s", 0);
  for (const auto& r : array(j, f, "ranks")) {
    const std::string path = "ranks[" + std::to_string(m.ranks.size()) + "].";
    Fields rf(r, source, path);
    RankMeasurements rm;
    rm.rank = static_cast<int>(rf.req_int("rank", 0, kMaxInt));
    rm.stage = static_cast<int>(rf.req_int("stage", 0, kMaxInt));
    rm.attn_tp = static_cast<int>(rf.req_int("attn_tp", 0, kMaxInt));
    rm.attn_dp = static_cast<int>(rf.req_int("attn_dp", 0, kMaxInt));
    rm.ep = static_cast<int>(rf.req_int("ep", 0, kMaxInt));
    rm.sequences = rf.opt_ints("sequences", 0);
    rm.load_s = rf.opt_double("load_s", 0);
    rm.prefill_s = req_double(r, rf, "prefill_s");
    rm.decode_step_s = rf.opt_doubles("decode_step_s", 0);
    rm.memory = memory_from_json(object(rf, "memory"), source, path + "memory.");
    rf.reject_unknown();
    m.ranks.push_back(std::move(rm));
  }
  if (static_cast<int>(m.ranks.size()) != m.world_size)
    f.fail_value("ranks", std::to_string(m.ranks.size()) + " entries",
                 "must list every rank of world_size " + std::to_string(m.world_size));
  m.plan = plan_from_json(object(f, "plan"), source);
  {
    Fields mf(object(f, "machine"), source, "machine.");
    m.machine.hostname = mf.opt_string("hostname", "");
    m.machine.cpu_model = mf.opt_string("cpu_model", "");
    m.machine.cores = static_cast<int>(mf.opt_int("cores", 0, 0, kMaxInt));
    m.machine.kernel_threads = static_cast<int>(mf.opt_int("kernel_threads", 0, 0, kMaxInt));
    mf.reject_unknown();
  }
  {
    Fields tf(object(f, "timing"), source, "timing.");
    m.timing_iterations = static_cast<int>(tf.req_int("iterations", 0, kMaxInt));
    const std::string clock = tf.opt_string("clock", "host");  // absent before 2026-12: the host's
    if (clock != "host" && clock != "device")
      throw core::InputError(source, "timing.clock", "\"" + clock + "\"", "must be \"host\" or \"device\"");
    m.op_clock = clock == "device" ? OpClock::device : OpClock::host;
    allow(tf, {"warmup_iterations", "method"});
    tf.reject_unknown();
  }
  size_t i = 0;
  for (const auto& o : array(j, f, "ops")) m.ops.push_back(op_from_json(o, source, i++));
  i = 0;
  for (const auto& c : array(j, f, "collectives")) m.collectives.push_back(collective_from_json(c, source, i++));
  if (const json* pc = f.opt_object("precision_check")) m.precision_check = precision_from_json(*pc, source);
  if (const json* g = f.opt_object("fp8_block_gemm")) {  // absent before 2026-12-05: bf16
    Fields gf(*g, source, "fp8_block_gemm.");
    const std::string path = gf.opt_string("path", "bf16");
    if (path != "bf16" && path != "w8a8")
      throw core::InputError(source, "fp8_block_gemm.path", "\"" + path + "\"", "must be \"bf16\" or \"w8a8\"");
    m.fp8_block_gemm = path == "w8a8" ? Fp8BlockGemm::w8a8 : Fp8BlockGemm::bf16;
    m.fp8_block_gemm_note = gf.opt_string("note", "");
    gf.reject_unknown();
  }
  allow(f, {"decode_step_mean_s", "peak_bytes", "notes"});
  f.reject_unknown();
  return m;
}

Measurements load_measurements(const std::filesystem::path& file) {
  return measurements_from_json(core::read_json_file(file), file.string());
}

void save_measurements(const std::filesystem::path& file, const Measurements& m) {
  core::write_file_atomically(file, measurements_to_json(m).dump(2) + "\n", "measurements");
}

}  // namespace dayzero::plan
