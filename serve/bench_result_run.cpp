#include "serve/bench_result_run.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"
#include "serve/engine.h"

namespace dayzero::serve {

namespace {

using nlohmann::json;

// The quantization modes of the CSV's gemm_quant_mode / moe_quant_mode ("" = bf16).
const char* const kQuantModes[] = {"", "fp8", "fp8_block", "nvfp4", "int4_wo"};

// The `backend` values of the two clients that name the engine serving the run.
// vLLM: vllm/benchmarks/lib/endpoint_request_func.py, ASYNC_REQUEST_FUNCS (older
// clients also had "sglang" and "tensorrt-llm"); SGLang: python/sglang/bench_serving.py,
// ASYNC_REQUEST_FUNCS and the --backend choices ("trt" is Triton's TensorRT-LLM
// generate_stream endpoint). The engine names themselves are accepted too (a
// `--metadata backend=...` replaces the client's value in vLLM's file).
const std::pair<const char*, Engine> kBackendEngines[] = {
    {"vllm", Engine::vllm},         {"vllm-chat", Engine::vllm},
    {"sglang", Engine::sglang},     {"sglang-native", Engine::sglang},
    {"sglang-oai", Engine::sglang}, {"sglang-oai-chat", Engine::sglang},
    {"trtllm", Engine::trtllm},     {"tensorrt-llm", Engine::trtllm},
    {"trt", Engine::trtllm}};
// vLLM's client: endpoint types that say only the API, not the server behind it ("vllm"
// is the same OpenAI completions request as "openai"): the engine is --engine's, else
// vLLM's (the server `vllm bench serve` is written for).
const char* const kVllmEndpoints[] = {"vllm", "openai", "openai-chat"};

std::optional<int64_t> integral(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isfinite(x) && std::floor(x) == x && std::abs(x) < 9.0e15) return static_cast<int64_t>(x);
  }
  return std::nullopt;
}

class RunReader {
 public:
  RunReader(const json& obj, const RunSource& src) : obj_(obj), src_(src) {
    if (!obj.is_object())
      throw core::InputError(src.file, "line " + std::to_string(src.line), core::show(obj),
                             "expected a JSON object (one run)");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& problem) const {
    throw core::InputError(src_.file, "line " + std::to_string(src_.line) + " " + key, value, problem);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    const json* v = get(key);
    fail(key, v ? core::show(*v) : "", problem);
  }
  // A key that neither the run nor the command line gives.
  [[noreturn]] void missing(const std::string& key, const std::string& flag, const std::string& what) const {
    const std::string record = src_.tool == BenchTool::vllm
                                   ? "or record it in the run (vllm bench serve --metadata " + key + "=...)"
                                   : "or add \"" + key +
                                         "\" to the run's line (sglang.bench_serving records no "
                                         "metadata)";
    fail(key, "", "missing: " + what + "; pass " + flag + " " + record);
  }

  const json* get(const std::string& key) const {
    const auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  // A measured latency in milliseconds, as seconds: finite and positive.
  double latency_s(const std::string& key) const {
    if (!get(key)) fail(key, "", "required field is missing");
    return opt_latency_s(key);
  }
  double opt_latency_s(const std::string& key) const {  // 0 when absent
    const json* v = get(key);
    if (!v) return 0;
    if (!v->is_number() || !std::isfinite(v->get<double>())) fail(key, "expected a number of milliseconds");
    if (!(v->get<double>() > 0)) fail(key, "a latency must be positive");
    return v->get<double>() / 1e3;
  }

  std::optional<int64_t> opt_count(const std::string& key, int64_t min, int64_t max) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    const auto n = integral(*v);
    if (!n) fail(key, "expected an integer");
    if (*n < min) fail(key, "must be at least " + std::to_string(min));
    if (*n > max) fail(key, "must be at most " + std::to_string(max));
    return n;
  }
  int64_t count(const std::string& key, int64_t min, int64_t max) const {
    if (!get(key)) fail(key, "", "required field is missing");
    return *opt_count(key, min, max);
  }

  // A metadata value: `--metadata` writes strings; a hand-edited file may hold numbers.
  std::optional<std::string> text(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "expected a string");
    return v->get<std::string>();
  }
  std::optional<int64_t> layout_int(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    std::optional<int64_t> n = integral(*v);
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      if (!s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        n = std::stoll(s);
    }
    if (!n || *n < 1) fail(key, "expected a positive integer");
    if (*n > kMaxBenchLayoutSize) fail(key, "must be at most " + std::to_string(kMaxBenchLayoutSize));
    return n;
  }

  // A list of token counts, each >= 0; empty when absent.
  std::vector<int64_t> lengths(const std::string& key) const {
    std::vector<int64_t> out;
    const json* v = get(key);
    if (!v) return out;
    if (!v->is_array()) fail(key, "expected a list of token counts");
    for (const json& e : *v) {
      const auto n = integral(e);
      if (!n || *n < 0) fail(key, core::show(e), "expected a list of token counts");
      out.push_back(*n);
    }
    return out;
  }

  const RunSource& source() const { return src_; }

 private:
  const json& obj_;
  const RunSource& src_;
};

// The run's value of a layout size, else the command line's, else `fallback`
// (nullopt: required).
int64_t layout_size(const RunReader& r, const std::string& key, std::optional<int64_t> flag_value, const char* flag,
                    std::optional<int64_t> fallback, const std::string& what) {
  if (const auto v = r.layout_int(key)) return *v;
  if (flag_value) {
    if (*flag_value < 1) r.fail(key, std::to_string(*flag_value), std::string("from ") + flag + ": must be positive");
    if (*flag_value > kMaxBenchLayoutSize)
      r.fail(key, std::to_string(*flag_value),
             std::string("from ") + flag + ": must be at most " + std::to_string(kMaxBenchLayoutSize));
    return *flag_value;
  }
  if (!fallback) r.missing(key, flag, what);
  return *fallback;
}

std::string quant_mode(const RunReader& r, const std::string& key, const std::optional<std::string>& flag_value,
                       const char* flag, const std::string& fallback) {
  const std::optional<std::string> file_value = r.text(key);
  std::string mode = file_value.value_or(flag_value.value_or(fallback));
  if (mode == "bf16") mode = "";
  if (std::find(std::begin(kQuantModes), std::end(kQuantModes), mode) == std::end(kQuantModes))
    r.fail(key, "\"" + mode + "\"",
           (file_value ? std::string() : std::string("from ") + flag + ": ") +
               "expected one of bf16 (or empty), fp8, fp8_block, nvfp4, int4_wo");
  return mode;
}

std::string engine_of(const RunReader& r, const BenchDefaults& d) {
  if (!d.engine.empty() && !parse_engine(d.engine))
    r.fail("backend", "\"" + d.engine + "\"", "from --engine: expected vllm, sglang or trtllm");
  const std::optional<std::string> backend = r.text("backend");
  if (!backend) {
    if (!d.engine.empty()) return d.engine;
    r.missing("backend", "--engine", "the run does not name its engine");
  }
  const bool endpoint = r.source().tool == BenchTool::vllm &&
                        std::find_if(std::begin(kVllmEndpoints), std::end(kVllmEndpoints),
                                     [&](const char* e) { return *backend == e; }) != std::end(kVllmEndpoints);
  if (endpoint) return d.engine.empty() ? std::string(engine_name(Engine::vllm)) : d.engine;
  for (const auto& [name, engine] : kBackendEngines)
    if (*backend == name) return std::string(engine_name(engine));
  r.fail("backend", "\"" + *backend + "\"", "not an engine DayZero models (vllm, sglang, trtllm)");
}

// Where the run was served: the GPU system, the model, the engine, the layout and the precisions.
void read_deployment(const RunReader& r, const BenchDefaults& d, BenchRow& b) {
  b.system = r.text("system").value_or(d.system);
  if (b.system.empty()) r.missing("system", "--system", "the GPU system the run was served on (e.g. h100_sxm)");
  // The Hugging Face id: the run's `model_path`, else --model, else the id vLLM's client sent (`model_id`).
  b.model_path = r.text("model_path").value_or(d.model_path);
  if (b.model_path.empty() && r.source().tool == BenchTool::vllm) b.model_path = r.text("model_id").value_or("");
  if (b.model_path.empty()) r.missing("model_path", "--model", "the model's Hugging Face id");
  b.backend = engine_of(r, d);
  b.backend_version = r.text("backend_version").value_or("");
  b.tp = layout_size(r, "tp", d.tp, "--tp", std::nullopt, "the run's tensor-parallel size");
  b.pp = layout_size(r, "pp", d.pp, "--pp", 1, "");
  b.attention_dp = layout_size(r, "attention_dp", d.attention_dp, "--dp", 1, "");
  b.moe_ep = layout_size(r, "moe_ep", d.moe_ep, "--ep", 1, "");
  // Without expert parallelism the engines shard the experts over all attention ranks.
  const int64_t ranks = b.tp * b.attention_dp;
  b.moe_tp = layout_size(r, "moe_tp", d.moe_tp, "--moe-tp", ranks % b.moe_ep == 0 ? ranks / b.moe_ep : 1, "");
  b.gemm_quant = quant_mode(r, "gemm_quant", d.gemm_quant, "--quant", "");
  b.moe_quant = quant_mode(r, "moe_quant", d.moe_quant, "--moe-quant", b.gemm_quant);
}

// Tokens per completed request: the mean of the per-request list when the run has it
// (the clients' detailed output; a failed request counts 0 output tokens, and is left
// out), else the total over the completed requests.
int64_t mean_tokens(const RunReader& r, const std::string& list_key, const std::string& total_key, int64_t completed,
                    const std::vector<int64_t>& output_lens) {
  const std::vector<int64_t> lens = r.lengths(list_key);
  double sum = 0, n = 0;
  if (!lens.empty()) {
    const bool mask = output_lens.size() == lens.size();
    for (size_t i = 0; i < lens.size(); ++i)
      if (!mask || output_lens[i] > 0) sum += static_cast<double>(lens[i]), n += 1;
  }
  if (n == 0) {
    sum = static_cast<double>(r.count(total_key, 1, INT64_MAX));
    n = static_cast<double>(completed);
  }
  if (!(sum / n <= static_cast<double>(kMaxBenchTokens)))
    r.fail(lens.empty() ? total_key : list_key,
           "a request's mean token count must be at most " + std::to_string(kMaxBenchTokens));
  const int64_t mean = std::llround(sum / n);
  if (mean < 1) r.fail(lens.empty() ? total_key : list_key, "a request's mean token count must be at least 1");
  return mean;
}

// The request rate: a positive number, or unlimited ("inf" in vLLM's file, Infinity in
// SGLang's): 0 = unlimited.
double request_rate_per_s(const RunReader& r) {
  const json* v = r.get("request_rate");
  if (!v) return 0;
  if (v->is_string()) {
    std::string s = v->get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (s == "inf" || s == "infinity") return 0;
  } else if (v->is_number() && std::isfinite(v->get<double>()) && v->get<double>() > 0) {
    return v->get<double>();
  }
  r.fail("request_rate", "expected a positive number of requests per second, or \"inf\"");
}

// The client: requests, rate, and the concurrency as BenchRow's batch per attention-DP
// replica and pipeline stage (concurrency() = batch_size x pp x attention_dp).
void read_client(const RunReader& r, BenchRow& b) {
  const int64_t completed = r.count("completed", 1, kMaxBenchRequests);
  const std::optional<int64_t> prompts = r.source().tool == BenchTool::vllm
                                             ? r.opt_count("num_prompts", 1, kMaxBenchRequests)
                                             : std::nullopt;  // SGLang writes none
  b.requests = prompts.value_or(completed);
  const std::vector<int64_t> output_lens = r.lengths("output_lens");
  b.isl = mean_tokens(r, "input_lens", "total_input_tokens", completed, output_lens);
  b.osl = mean_tokens(r, "output_lens", "total_output_tokens", completed, output_lens);
  b.request_rate_per_s = request_rate_per_s(r);
  // vLLM's client can ramp the rate up, or draw gamma-distributed gaps (burstiness != 1):
  // arrivals the row's Poisson rate would misstate.
  if (r.get("ramp_up_strategy")) r.fail("ramp_up_strategy", "a ramped request rate is not modelled");
  const json* burstiness = r.get("burstiness");
  if (b.request_rate_per_s > 0 && burstiness && !(burstiness->is_number() && burstiness->get<double>() == 1.0))
    r.fail("burstiness", "arrivals other than Poisson (burstiness 1) are not modelled");
  const int64_t replicas = b.pp * b.attention_dp;
  if (const auto cap = r.opt_count("max_concurrency", 1, kMaxBenchConcurrency)) {
    if (*cap % replicas != 0)
      r.fail("max_concurrency", "not a multiple of pp x attention_dp = " + std::to_string(replicas) +
                                    ": the simulation gives every replica and stage an equal share of the clients");
    b.batch_size = *cap / replicas;
  } else if (b.request_rate_per_s > 0) {
    b.batch_size = (b.requests + replicas - 1) / replicas;  // uncapped: at most every request in flight
  } else {
    r.fail("max_concurrency", "",
           "missing, and the request rate is unlimited: every request was sent at once, a burst the simulation "
           "does not model (rerun the client with --max-concurrency, or a finite --request-rate)");
  }
}

}  // namespace

BenchRow bench_row_of(const json& run, const RunSource& src, const BenchDefaults& d) {
  const RunReader r(run, src);
  BenchRow b;
  b.id = src.stem + ":" + std::to_string(src.run);
  b.file = src.file;
  b.line = src.line;
  b.mode = "agg";
  read_deployment(r, d, b);
  read_client(r, b);
  b.ttft_s = r.latency_s("mean_ttft_ms");
  b.tpot_s = r.latency_s("mean_tpot_ms");
  b.ttft_p50_s = r.opt_latency_s("median_ttft_ms");
  b.ttft_p99_s = r.opt_latency_s("p99_ttft_ms");
  b.tpot_p50_s = r.opt_latency_s("median_tpot_ms");
  b.tpot_p99_s = r.opt_latency_s("p99_tpot_ms");
  return b;
}

}  // namespace dayzero::serve
