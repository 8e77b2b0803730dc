// `dayzero run`'s printout (run_output.h).
#include "cli/run_output.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "cli/format.h"
#include "core/collective.h"
#include "executor/measurements.h"

namespace dayzero::cli {

namespace {
// Seconds as microseconds with one decimal.
std::string us_1(double s) { return fixed(s * 1e6, 1); }

}  // namespace

void print_run(std::ostream& out, const plan::Measurements& ms) {
  for (size_t i = 0; i < ms.tokens.size(); ++i) {
    out << (ms.tokens.size() == 1 ? std::string("generated tokens:") : "sequence " + std::to_string(i) + " tokens:");
    for (int64_t t : ms.tokens[i]) out << ' ' << t;
    out << '\n';
  }
  int64_t prompt_tokens = 0;
  for (const auto& p : ms.prompts) prompt_tokens += static_cast<int64_t>(p.size());
  out << "prefill " << fixed(ms.prefill_s * 1e3, 3) << " ms (" << prompt_tokens << " tokens, " << ms.prompts.size()
      << " sequence(s)), decode " << fixed(ms.decode_step_mean_s() * 1e3, 3) << " ms/step (" << ms.decode_step_s.size()
      << " steps; the slowest rank's)\n";
  for (const auto& r : ms.ranks) {
    const auto& mem = r.memory;
    out << "rank " << r.rank << " (stage " << r.stage << ", tp " << r.attn_tp << ", dp " << r.attn_dp << ", ep " << r.ep
        << "): weights loaded in " << fixed(r.load_s * 1e3, 1) << " ms; peak " << with_commas(mem.peak_bytes())
        << " bytes (weights " << with_commas(mem.weights_bytes) << " + KV " << with_commas(mem.kv_bytes)
        << " + workspace " << with_commas(mem.workspace_bytes) << " + communication "
        << with_commas(mem.comm_buffer_bytes) << " + runtime " << with_commas(mem.runtime_bytes) << "); RSS high-water "
        << with_commas(mem.rss_hwm_bytes) << " bytes\n";
    if (mem.device_pool_peak_bytes > 0 || mem.device_used_bytes > 0)
      out << "  device: pool peak " << with_commas(mem.device_pool_peak_bytes) << " bytes (the run's weights "
          << with_commas(mem.device_weights_bytes) << ", the kernels' buffers at most "
          << with_commas(mem.device_workspace_peak_bytes) << "); in use on the device at the end "
          << with_commas(mem.device_used_bytes) << " bytes (cudaMemGetInfo)\n";
  }
  if (ms.fp8_block_gemm == plan::Fp8BlockGemm::w8a8)
    out << "FP8 block GEMMs past the GEMV: W8A8 (activations to E4M3 per row and 128 columns)\n";
  if (!ms.fp8_block_gemm_note.empty()) out << "note: " << ms.fp8_block_gemm_note << '\n';
  if (ms.ops.empty() || ms.timing_iterations == 0) return;
  out << "(rank 0's ops below; every rank's are in the file)\n";
  std::vector<const executor::OpMeasurement*> ops;
  for (const auto& o : ms.ops)
    if (o.rank == 0) ops.push_back(&o);
  auto total = [](const executor::OpMeasurement* o) { return o->min_s * static_cast<double>(o->calls); };
  std::stable_sort(ops.begin(), ops.end(), [&](auto* a, auto* b) { return total(a) > total(b); });
  if (ops.size() > 12) ops.resize(12);
  out << "\nops by total time (min x calls; " << ms.timing_iterations << " timed iterations after 1 warm-up"
      << (ms.op_clock == plan::OpClock::device ? "; device clock: CUDA events around the kernels" : "") << "):\n"
      << pad_right("phase", 8) << pad_right("op", 22) << pad_right("kind:variant", 26) << pad_right("shape", 12)
      << pad_left("calls", 6) << pad_left("mean us", 10) << pad_left("min us", 10) << pad_left("GFLOP/s", 9)
      << pad_left("GB/s", 8) << '\n';
  for (const auto* o : ops)
    out << pad_right(o->phase, 8) << pad_right(o->name, 22) << pad_right(o->kind + ":" + o->variant, 26)
        << pad_right(executor::shape_string(o->shape), 12) << pad_left(std::to_string(o->calls), 6)
        << pad_left(us_1(o->mean_s), 10) << pad_left(us_1(o->min_s), 10) << pad_left(fixed(o->gflops(), 2), 9)
        << pad_left(fixed(o->gbps(), 2), 8) << '\n';
  if (ms.collectives.empty()) return;
  out << "\ncollectives (nccl-tests sizes and bus factors; min of " << ms.timing_iterations
      << " timed iterations after 1 warm-up):\n"
      << pad_right("collective", 16) << pad_left("ranks", 6) << pad_left("bytes", 12) << pad_left("calls", 6)
      << pad_left("mean us", 10) << pad_left("min us", 10) << pad_left("algbw GB/s", 12) << pad_left("busbw GB/s", 12)
      << '\n';
  for (const auto& c : ms.collectives)
    if (c.rank == 0)
      out << pad_right(std::string(core::collective_name(c.collective)), 16) << pad_left(std::to_string(c.ranks), 6)
          << pad_left(with_commas(c.size_bytes), 12) << pad_left(std::to_string(c.calls), 6)
          << pad_left(us_1(c.mean_s), 10) << pad_left(us_1(c.min_s), 10) << pad_left(fixed(c.algbw_GBps(), 3), 12)
          << pad_left(fixed(c.busbw_GBps(), 3), 12) << '\n';
}

}  // namespace dayzero::cli
