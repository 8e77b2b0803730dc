// bench_executor: this CPU's float32 peak, and the executor's measured GEMM rates
// against it.
//
//   build/bench/bench_executor [--no-peak] [MEASUREMENTS.json ...]
//
// (a) Peak: a multiply-add throughput loop per core (12-16 independent chains,
// enough to cover the FP pipes' latency), on 1 thread and on every core, for each
// ISA the CPU has: SSE2 mulps + addps (what this build's Eigen emits: the project
// sets no -march, so x86-64 baseline), AVX2 FMA and AVX-512 FMA (compiled per
// function with target attributes, run only when cpuid says so). Then the
// "achievable" figures: a 2048^3 Eigen sgemm on 1 thread and on all threads (this
// build's flags), and the executor's own linear kernels through its thread pool.
// Only runs in which every thread had its core throughout count (another process
// may be compiling on this machine); when none did, CPU-time rates stand in.
// (b) For each Measurements file (`dayzero run --out`): step times per phase and,
// for every GEMM (kind gemm / expert_gemm) by name and shape, GFLOP/s = flops /
// min_s and its share of the peak of the threads one rank uses, plus the
// time-weighted average (sum flops x calls / sum min_s x calls).
#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/json_fields.h"
#include "executor/kernels.h"
#include "executor/threads.h"

using nlohmann::json;
namespace ex = dayzero::executor;

namespace {

volatile float g_sink = 0;  // keeps the loops' results observable

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// ---- (a) peak --------------------------------------------------------------
constexpr int64_t kPeakIters = 10'000'000;  // chain steps per run: ~50-80 ms at 3-4 GHz
constexpr int kPeakRuns = 7;                // best of: short runs find the gaps in another process's load

volatile float g_one = 1.0f, g_zero = 0.0f;  // opaque to the compiler: x * 1 and x + 0 are not folded

// Each returns the FLOPs done; `sink` keeps the result alive.
// SSE2 has no FMA: 6 chains of mulps (on the 2 FMUL pipes) and 6 of addps (on the
// 2 FADD pipes), 3-cycle latency each, x * 1 and x + 0 (no drift, no denormals).
int64_t muladd_sse2(int64_t iters, float& sink) {
  constexpr int kChains = 6;  // 12 + 2 of the 16 xmm registers
  __m128 m[kChains], s[kChains];
  for (int c = 0; c < kChains; ++c) {
    m[c] = _mm_set1_ps(1.0f + static_cast<float>(c));
    s[c] = _mm_set1_ps(2.0f + static_cast<float>(c));
  }
  const __m128 a = _mm_set1_ps(g_one), b = _mm_set1_ps(g_zero);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      m[c] = _mm_mul_ps(m[c], a);
      s[c] = _mm_add_ps(s[c], b);
    }
  }
  __m128 r = m[0];
  for (int c = 0; c < kChains; ++c) r = _mm_add_ps(r, _mm_add_ps(m[c], s[c]));
  sink += _mm_cvtss_f32(r);
  return iters * kChains * 2 * 4;
}

// FMA: acc = acc * 0.999 + 0.001 converges to 1 (no overflow, no denormals).
__attribute__((target("avx2,fma"))) int64_t fma_avx2(int64_t iters, float& sink) {
  constexpr int kChains = 12;  // FMA latency 4 x 2 pipes = 8 in flight needed; 16 ymm registers
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.1f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  sink += _mm256_cvtss_f32(s);
  return iters * kChains * 8 * 2;
}

__attribute__((target("avx512f"))) int64_t fma_avx512(int64_t iters, float& sink) {
  constexpr int kChains = 16;  // 32 zmm registers
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.1f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  for (float v : lanes) sink += v;
  return iters * kChains * 16 * 2;
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Best of `runs` runs of body(t) (returns its FLOPs) on `threads` threads at once.
// wall: GFLOP/s of all together by the wall clock over the runs in which every
// thread ran throughout (its CPU time >= 90% of the wall time: no other process
// took its core); 0 when no run did. cpu: the sum over threads of FLOPs / own CPU
// time, what the cores deliver while our threads run (immune to time-sharing, not
// to sharing a physical core's FP units, e.g. SMT siblings).
struct Rates {
  double wall = 0, cpu = 0;
};
Rates run_threads(int threads, int runs, const std::function<int64_t(int)>& body) {
  Rates best;
  for (int run = 0; run < runs; ++run) {
    std::vector<double> flops(static_cast<size_t>(threads)), cpu(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    const double t0 = now_s();
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const double c0 = thread_cpu_s();
        flops[static_cast<size_t>(t)] = static_cast<double>(body(t));
        cpu[static_cast<size_t>(t)] = thread_cpu_s() - c0;
      });
    for (auto& p : pool) p.join();
    const double s = now_s() - t0;
    double total = 0, rate = 0;
    bool concurrent = true;
    for (size_t t = 0; t < flops.size(); ++t) {
      total += flops[t];
      rate += flops[t] / cpu[t];
      concurrent = concurrent && cpu[t] >= 0.9 * s;
    }
    if (concurrent) best.wall = std::max(best.wall, total / s / 1e9);
    best.cpu = std::max(best.cpu, rate / 1e9);
  }
  return best;
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// C = A B with n x n matrices, columns of B split over `threads` threads.
Rates eigen_sgemm(int threads, int64_t n) {
  const Eigen::MatrixXf A = Eigen::MatrixXf::Random(n, n), B = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf C(n, n);
  return run_threads(threads, 3, [&](int t) {
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    C.middleCols(lo, hi - lo).noalias() = A * B.middleCols(lo, hi - lo);
    return 2 * n * n * (hi - lo);
  });
}

// The executor's linear (y = x W^T) through its pool: best of 3, GFLOP/s.
double executor_linear_gflops(int threads, int64_t T, int64_t in, int64_t out, bool fp8) {
  ex::set_kernel_threads(threads);
  const ex::Tensor x({T, in}, std::vector<float>(static_cast<size_t>(T * in), 0.5f));
  std::vector<float> wf(static_cast<size_t>(out * in), 0.25f);
  std::vector<uint8_t> codes(static_cast<size_t>(out * in), 0x38);  // fp8 1.0
  std::vector<float> scales(static_cast<size_t>(((out + 127) / 128) * ((in + 127) / 128)), 0.01f);
  ex::StoredWeight w;
  w.name = fp8 ? "fp8" : "f32";
  w.shape = {out, in};
  if (fp8) {
    w.kind = dayzero::model::StorageKind::fp8_block;
    w.dtype = dayzero::model::DType::f8_e4m3;
    w.data = std::as_bytes(std::span<const uint8_t>(codes));
    w.scales = std::as_bytes(std::span<const float>(scales));
  } else {
    w.data = std::as_bytes(std::span<const float>(wf));
  }
  double best = 1e30;
  for (int run = 0; run < 4; ++run) {
    const double t0 = now_s();
    const ex::Tensor y = fp8 ? ex::linear_dequant(x, w, 0, {}) : ex::linear_f32(x, w, 0, {});
    if (run > 0) best = std::min(best, now_s() - t0);  // run 0: warm-up
  }
  return 2.0 * static_cast<double>(T * in * out) / best / 1e9;
}

// GFLOP/s of one thread and of all cores, from concurrent runs (Rates::wall);
// when another process kept the cores from running together, from CPU time, and
// flagged.
struct Peak {
  double per_thread = 0, all = 0;
  int cores = 1;
  bool contended = false;
  double at(int threads) const { return threads >= cores ? all : std::max(per_thread, all * threads / cores); }
};
Peak peak_of(const Rates& one, const Rates& all, int cores) {
  Peak p{one.wall > 0 ? one.wall : one.cpu, all.wall, cores, all.wall == 0 || one.wall == 0};
  if (all.wall == 0) p.all = all.cpu;
  return p;
}

// ---- (b) measurements ------------------------------------------------------
double num(const json& j, const char* key, double fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
double op_flops(const json& op) {
  if (op.contains("flops")) return num(op, "flops");
  if (op.contains("cost") && op["cost"].is_object()) return num(op["cost"], "flops");
  return 0;
}
std::string shape_of(const json& op) {
  std::string s = "[";
  if (op.contains("shape") && op["shape"].is_array())
    for (const auto& d : op["shape"])
      s += (s.size() > 1 ? "," : "") + (d.is_number() ? std::to_string(d.get<int64_t>()) : "?");
  return s + "]";
}
int64_t count_tokens(const json& j, const char* key) {  // a token list, or a list of them
  if (!j.contains(key) || !j[key].is_array()) return 0;
  int64_t n = 0;
  for (const auto& e : j[key]) n += e.is_array() ? static_cast<int64_t>(e.size()) : 1;
  return n;
}

// The GEMMs of rank 0 in one phase, by total time, against this CPU's peaks.
void report_gemms(const json& m, const char* phase, double step, double peak, double peak_sse2, double achievable) {
  std::vector<const json*> gemms;
  for (const auto& op : m["ops"]) {
    const std::string kind = str(op, "kind");
    if ((kind == "gemm" || kind == "expert_gemm") && str(op, "phase") == phase && num(op, "rank", 0) == 0 &&
        num(op, "min_s") > 0)
      gemms.push_back(&op);
  }
  if (gemms.empty()) return;
  auto total_s = [](const json* o) { return num(*o, "min_s") * num(*o, "calls", 1); };
  std::stable_sort(gemms.begin(), gemms.end(), [&](auto* a, auto* b) { return total_s(a) > total_s(b); });
  std::printf("\n%s GEMMs of rank 0 (min of the timed iterations; by total time = min x calls):\n", phase);
  std::printf("%-26s %-12s %-14s %6s %10s %9s %8s %8s %8s\n", "op", "kind", "shape", "calls", "min ms", "GFLOP/s",
              "%FMA", "%SSE2", "%sgemm");
  double flops = 0, secs = 0;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const json& o = *gemms[i];
    const double calls = num(o, "calls", 1), min_s = num(o, "min_s"), gf = op_flops(o) / min_s / 1e9;
    flops += op_flops(o) * calls;
    secs += min_s * calls;
    if (i < 16)
      std::printf("%-26s %-12s %-14s %6.0f %10.3f %9.2f %7.1f%% %7.1f%% %7.1f%%\n", str(o, "name").c_str(),
                  str(o, "kind").c_str(), shape_of(o).c_str(), calls, min_s * 1e3, gf, 100 * gf / peak,
                  100 * gf / peak_sse2, 100 * gf / achievable);
  }
  if (gemms.size() > 16) std::printf("... %zu more rows (in the averages below)\n", gemms.size() - 16);
  const double avg = flops / secs / 1e9;
  std::printf(
      "time-weighted: %.2f GFLOP/s = %.1f%% of FMA peak, %.1f%% of SSE2 peak, %.1f%% of Eigen sgemm; GEMMs "
      "%.3f s of the phase's %.3f s (%.0f%%)\n",
      avg, 100 * avg / peak, 100 * avg / peak_sse2, 100 * avg / achievable, secs, step,
      step > 0 ? 100 * secs / step : 0.0);
}

void report(const std::string& file, const Peak& fma, const Peak& sse2, const Peak& sgemm) {
  json m;
  try {
    m = dayzero::core::read_json_file(file);
  } catch (const std::exception& e) {
    std::printf("\n%s\n", e.what());  // names the file
    return;
  }
  const int world = static_cast<int>(num(m, "world_size", 1));
  // Kernel threads per rank: as recorded, else DAYZERO_THREADS, else the default
  // split of this machine's cores (all ranks assumed on this node).
  const int recorded = m.contains("machine") ? static_cast<int>(num(m["machine"], "kernel_threads")) : 0;
  const char* env = std::getenv("DAYZERO_THREADS");
  const int threads = recorded > 0 ? recorded
                      : env        ? std::max(1, std::atoi(env))
                                   : std::max(1, fma.cores / std::max(1, world));
  std::printf("\n== %s: model %s, %d rank(s), %d kernel thread(s) per rank (%s)\n", file.c_str(),
              str(m, "model").c_str(), world, threads,
              recorded > 0 ? "recorded"
              : env        ? "DAYZERO_THREADS"
                           : "assumed: cores / ranks");
  std::vector<double> decode;
  if (m.contains("decode_step_s") && m["decode_step_s"].is_array())
    for (const auto& d : m["decode_step_s"]) decode.push_back(d.is_number() ? d.get<double>() : 0);
  double decode_sum = 0;
  for (double d : decode) decode_sum += d;
  const int64_t prompt = std::max(count_tokens(m, "prompt"), count_tokens(m, "prompts"));
  std::printf("prefill %.3f s (%lld prompt tokens: %.1f tokens/s); decode %.3f s/step mean over %zu steps (",
              num(m, "prefill_s"), static_cast<long long>(prompt),
              static_cast<double>(prompt) / std::max(1e-12, num(m, "prefill_s")),
              decode.empty() ? 0.0 : decode_sum / static_cast<double>(decode.size()), decode.size());
  for (size_t i = 0; i < decode.size(); ++i) std::printf("%s%.3f", i ? " " : "", decode[i]);
  std::printf(")\n");
  if (m.contains("ranks") && m["ranks"].is_array())
    for (const auto& r : m["ranks"])
      if (r.is_object() && r.contains("prefill_s")) {
        double sum = 0, n = 0;
        if (r.contains("decode_step_s") && r["decode_step_s"].is_array())
          for (const auto& d : r["decode_step_s"]) {
            sum += d.is_number() ? d.get<double>() : 0;
            n += 1;
          }
        std::printf("  rank %d: prefill %.3f s, decode %.3f s/step\n", static_cast<int>(num(r, "rank")),
                    num(r, "prefill_s"), n > 0 ? sum / n : num(r, "decode_step_mean_s"));
      }
  if (!m.contains("ops") || !m["ops"].is_array()) {
    std::printf("no ops in the file\n");
    return;
  }
  const double peak = fma.at(threads), peak_sse2 = sse2.at(threads), achievable = sgemm.at(threads);
  std::printf("peaks for %d thread(s): FMA %.1f GFLOP/s, SSE2 mul+add %.1f, Eigen sgemm %.1f\n", threads, peak,
              peak_sse2, achievable);
  for (const char* phase : {"prefill", "decode"})
    report_gemms(m, phase, std::string(phase) == "prefill" ? num(m, "prefill_s") : decode_sum, peak, peak_sse2,
                 achievable);
}

}  // namespace

int main(int argc, char** argv) {
  bool peak_run = true;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-peak") peak_run = false;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: bench_executor [--no-peak] [MEASUREMENTS.json ...]\n");
      return 0;
    } else files.push_back(a);
  }
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  Peak fma{0, 0, cores, false}, sse2{0, 0, cores, false}, sgemm{0, 0, cores, false};
  std::ifstream loadavg("/proc/loadavg");
  std::string load1;
  loadavg >> load1;
  std::printf("CPU: %d hardware threads; this build's Eigen uses: %s; load average (1 min) %s\n", cores,
              Eigen::SimdInstructionSetsInUse(), load1.c_str());
  if (peak_run) {
    std::printf(
        "\n(a) float32 peak, GFLOP/s (multiply-add = 2 FLOPs; best of 7 runs, sgemm 3, in which the threads\n"
        "    ran together; last column: per thread by its own CPU time, all threads running)\n"
        "%-32s %12s %12s %14s\n",
        "kernel", "1 thread", (std::to_string(cores) + " threads").c_str(), "per thread");
    auto print = [&](const char* name, const Rates& one, const Rates& all) {
      const Peak p = peak_of(one, all, cores);
      std::printf("%-32s %12.1f %12.1f %14.1f%s\n", name, p.per_thread, p.all, all.cpu / cores,
                  p.contended ? "  (contended: from CPU time)" : "");
      return p;
    };
    auto row = [&](const char* name, int64_t (*fn)(int64_t, float&), Peak* into) {
      std::vector<float> sinks(static_cast<size_t>(cores));
      const auto body = [&](int t) { return fn(kPeakIters, sinks[static_cast<size_t>(t)]); };
      const Peak p = print(name, run_threads(1, kPeakRuns, body), run_threads(cores, kPeakRuns, body));
      for (float v : sinks) g_sink = g_sink + v;
      if (into && p.per_thread > into->per_thread) *into = p;
    };
    row("SSE2 mul+add (this build)", muladd_sse2, &sse2);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) row("AVX2 FMA (256-bit)", fma_avx2, &fma);
    if (__builtin_cpu_supports("avx512f")) row("AVX-512F FMA (512-bit)", fma_avx512, &fma);
    if (fma.all == 0) fma = sse2;  // no FMA unit: the SSE2 figure is the peak
    sgemm = print("Eigen sgemm 2048^3 (achievable)", eigen_sgemm(1, 2048), eigen_sgemm(cores, 2048));
    std::printf("(%d threads: when the figure is ~1 thread's, the cores share their FP units, as SMT siblings do)\n",
                cores);
    std::printf("executor linear, its kernel pool:\n");
    struct Case {
      const char* name;
      int64_t T, in, out;
      bool fp8;
    };
    for (const Case c : {Case{"  f32 [64,7168] x [2048,7168]^T", 64, 7168, 2048, false},
                         Case{"  f32 [1,7168] x [2048,7168]^T", 1, 7168, 2048, false},
                         Case{"  fp8 [64,7168] x [2048,7168]^T", 64, 7168, 2048, true},
                         Case{"  fp8 [1,7168] x [2048,7168]^T", 1, 7168, 2048, true}})
      std::printf("%-32s %12.1f %12.1f\n", c.name, executor_linear_gflops(1, c.T, c.in, c.out, c.fp8),
                  executor_linear_gflops(cores, c.T, c.in, c.out, c.fp8));
    ex::set_kernel_threads(ex::default_kernel_threads());
  } else {
    // Without measuring: nominal 3 GHz x FLOPs/cycle of AVX2 FMA (32) and SSE2 mul+add (16).
    fma = {96, 96.0 * cores, cores, true};
    sse2 = {48, 48.0 * cores, cores, true};
    sgemm = {35, 35.0 * cores, cores, true};
    std::printf("--no-peak: nominal peaks (3 GHz x 32 / 16 FLOP/cycle; sgemm 35 GFLOP/s per thread), not measured\n");
  }
  for (const auto& f : files) report(f, fma, sse2, sgemm);
  return 0;
}
