// The executor's serving soak (issue 16): many requests through continuous
// batching over a paged KV cache of 16K tokens on a small synthetic model, the
// process's resident memory sampled after every step, and every request's tokens
// checked against the same request run alone. Prints the memory curve (after
// loading, after warm-up, at each tenth of the requests, at the end) and exits
// non-zero when an output differs or memory grows after warm-up.
//
// usage: bench_soak [--requests N] [--kv-tokens T] [--max-prompt P] [--max-output O]
//                   [--token-budget B] [--max-running R] [--seed S] [--csv FILE] [--no-check]
//                   [--no-memory-check]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "executor/runner.h"
#include "model/synth.h"

namespace fs = std::filesystem;
using namespace dayzero;

namespace {

struct Args {
  int64_t requests = 1000, kv_tokens = 16384, max_prompt = 2048, max_output = 256;
  int64_t token_budget = 512, max_running = 64;
  uint64_t seed = 1;
  std::string csv;
  bool check = true, memory_check = true;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(k + " needs a value");
      return argv[++i];
    };
    auto count = [&](int64_t lo, int64_t hi) {
      const int64_t v = std::stoll(value());
      if (v < lo || v > hi)
        throw std::runtime_error(k + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return v;
    };
    if (k == "--requests") a.requests = count(1, 1'000'000);
    else if (k == "--kv-tokens") a.kv_tokens = count(16, 1 << 24);
    else if (k == "--max-prompt") a.max_prompt = count(16, 16384);
    else if (k == "--max-output") a.max_output = count(1, 16384);
    else if (k == "--token-budget") a.token_budget = count(1, 1 << 20);
    else if (k == "--max-running") a.max_running = count(1, 1 << 20);
    else if (k == "--seed") a.seed = static_cast<uint64_t>(count(0, INT64_MAX));
    else if (k == "--csv") a.csv = value();
    else if (k == "--no-check") a.check = false;
    else if (k == "--no-memory-check")
      a.memory_check = false;  // sanitizer builds: ASan's quarantine holds freed memory
    else throw std::runtime_error("unknown argument " + k + " (see the usage at the top of bench/bench_soak.cpp)");
  }
  if (a.max_prompt + a.max_output - 1 > a.kv_tokens)
    throw std::runtime_error("--max-prompt + --max-output - 1 must fit --kv-tokens");
  return a;
}

// The tiny llama fixture's shapes (tests/fixtures/tiny/llama: hidden 64, 2 layers,
// 4 heads of 16, 2 KV heads, vocabulary 256) with 32K positions.
void write_config(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "max_position_embeddings": 32768,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": false,
  "torch_dtype": "float32"})";
}

// Prompts log-uniform in [16, max_prompt] (most short, a long tail), outputs uniform in [1, max_output].
std::vector<executor::ServeRequest> make_requests(const Args& a) {
  std::mt19937_64 rng(a.seed);
  std::uniform_real_distribution<double> log_len(std::log(16.0), std::log(static_cast<double>(a.max_prompt)));
  std::uniform_int_distribution<int64_t> out_len(1, a.max_output), token(0, 255);
  std::vector<executor::ServeRequest> reqs(static_cast<size_t>(a.requests));
  for (auto& r : reqs) {
    const auto len = static_cast<int64_t>(std::exp(log_len(rng)));
    for (int64_t t = 0; t < len; ++t) r.prompt.push_back(token(rng));
    r.output_tokens = out_len(rng);
  }
  return reqs;
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// What the soak keeps of the run while it runs, in fixed space: the sample at
// each tenth of the requests finished (the first is the end of warm-up), the
// most memory and KV blocks after warm-up, and the CSV streamed to a file.
class MemoryCurve {
 public:
  MemoryCurve(int64_t requests, const std::string& csv) : requests_(requests) {
    marks_.reserve(10);
    if (csv.empty()) return;
    csv_.open(csv);
    if (!csv_) throw std::runtime_error("cannot write " + csv);
    csv_ << "step,rows,sampled,running,waiting,finished,kv_blocks_used,kv_blocks_allocated,rss_bytes,step_s\n";
  }
  void operator()(const executor::ServeSample& s) {
    if (csv_.is_open())
      csv_ << s.step << ',' << s.rows << ',' << s.sampled << ',' << s.running << ',' << s.waiting << ',' << s.finished
           << ',' << s.kv_blocks_used << ',' << s.kv_blocks_allocated << ',' << s.rss_bytes << ',' << s.step_s << '\n';
    if (!marks_.empty()) {  // after warm-up
      peak_rss_ = std::max(peak_rss_, s.rss_bytes);
      peak_blocks_ = std::max(peak_blocks_, s.kv_blocks_allocated);
    }
    while (marks_.size() < 10 &&
           s.finished >= std::max<int64_t>(1, requests_ * static_cast<int64_t>(marks_.size() + 1) / 10))
      marks_.push_back(s);
    last_ = s;
    ++steps_;
  }
  // Prints the curve; returns the growth after warm-up in bytes.
  int64_t report(int64_t loaded_rss) const {
    const auto& warm = marks_.front();
    std::printf(
        "memory (MiB, resident): after loading %.2f, after warm-up (step %lld, %lld requests done) %.2f, "
        "end %.2f, most after warm-up %.2f\n",
        mib(loaded_rss), static_cast<long long>(warm.step), static_cast<long long>(warm.finished), mib(warm.rss_bytes),
        mib(last_.rss_bytes), mib(peak_rss_));
    std::printf("KV blocks allocated: at warm-up %lld, most after %lld\n",
                static_cast<long long>(warm.kv_blocks_allocated), static_cast<long long>(peak_blocks_));
    std::printf("%-10s %8s %10s %10s %10s\n", "finished", "step", "rss_MiB", "kv_alloc", "kv_used");
    for (const auto& m : marks_)
      std::printf("%-10lld %8lld %10.2f %10lld %10lld\n", static_cast<long long>(m.finished),
                  static_cast<long long>(m.step), mib(m.rss_bytes), static_cast<long long>(m.kv_blocks_allocated),
                  static_cast<long long>(m.kv_blocks_used));
    return peak_rss_ - warm.rss_bytes;
  }
  int64_t steps() const { return steps_; }

 private:
  int64_t requests_;
  std::ofstream csv_;
  std::vector<executor::ServeSample> marks_;
  executor::ServeSample last_;
  int64_t peak_rss_ = 0, peak_blocks_ = 0, steps_ = 0;
};

// Each request run alone (its own Runner, default plan); returns how many differ.
int64_t check_alone(const model::Model& m, const fs::path& weights, const std::vector<executor::ServeRequest>& reqs,
                    const executor::ServeResult& res) {
  int64_t differ = 0;
  executor::SelfCommunicator comm;
  for (size_t i = 0; i < reqs.size(); ++i) {
    plan::Plan own;
    own.model = m.config.source;
    executor::Runner alone(m, own, comm, weights);
    const auto one = alone.run(reqs[i].prompt, reqs[i].output_tokens - 1);
    if (one.sequences.at(0).tokens != res.tokens[i]) {
      if (differ < 10) std::printf("request %zu differs from its run alone\n", i);
      ++differ;
    }
  }
  return differ;
}

int run(const Args& a) {
  const fs::path dir = fs::temp_directory_path() / ("dayzero_soak_" + std::to_string(::getpid()));
  write_config(dir / "config");
  model::write_synthetic_checkpoint(dir / "config" / "config.json", dir / "weights", {});
  const model::Model m = model::load_model((dir / "weights").string());
  const auto reqs = make_requests(a);
  int64_t prompt_tokens = 0, output_tokens = 0;
  for (const auto& r : reqs) prompt_tokens += static_cast<int64_t>(r.prompt.size()), output_tokens += r.output_tokens;
  std::printf(
      "%lld requests: %lld prompt and %lld output tokens; KV pool %lld tokens, budget %lld rows/step, "
      "at most %lld running\n",
      static_cast<long long>(a.requests), static_cast<long long>(prompt_tokens), static_cast<long long>(output_tokens),
      static_cast<long long>(a.kv_tokens), static_cast<long long>(a.token_budget),
      static_cast<long long>(a.max_running));
  executor::SelfCommunicator comm;
  plan::Plan p;
  p.model = m.config.source;
  executor::Runner server(m, p, comm, dir / "weights");
  const int64_t loaded_rss = executor::rss_current_bytes();
  MemoryCurve curve(a.requests, a.csv);
  executor::ServeOptions o;
  o.kv_tokens = a.kv_tokens;
  o.token_budget = a.token_budget;
  o.max_running = a.max_running;
  o.on_step = [&](const executor::ServeSample& s) { curve(s); };
  const executor::ServeResult res = server.serve(reqs, o);
  std::printf("served in %.1f s: %lld steps, %.0f output tokens/s\n", res.total_s,
              static_cast<long long>(curve.steps()), static_cast<double>(output_tokens) / res.total_s);
  const int64_t growth = curve.report(loaded_rss);
  int status = 0;
  // Growth allowed after warm-up: 1 MiB (allocator noise; the KV pool alone is 4 MiB at 16K tokens).
  if (a.memory_check && growth > (1 << 20)) {
    std::printf("FAIL: resident memory grew %.2f MiB after warm-up\n", mib(growth));
    status = 1;
  }
  if (a.check) {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t differ = check_alone(m, dir / "weights", reqs, res);
    std::printf("outputs equal to each request run alone: %lld of %lld (checked in %.1f s)\n",
                static_cast<long long>(a.requests - differ), static_cast<long long>(a.requests),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (differ > 0) status = 1;
  }
  fs::remove_all(dir);
  std::printf("%s\n", status == 0 ? "PASS" : "FAIL");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_soak: error: %s\n", e.what());
    return 1;
  }
}
