#pragma once
// What sets the time of a piece of a step: the efficiency figure of the roofline term
// that binds (simulate/efficiency.h), the fixed per-kernel cost, or a link. A step's
// time split this way is linear in each part: costing a figure's part c times slower
// scales the step by exactly that part (as long as no op changes its binding term),
// which is what `calibrate --bench` fits (serve/serving_fit.h).

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dayzero::simulate {

enum class TimeFigure {
  gemm_compute,        // GEMM FLOPs at the peak x Efficiency::gemm_compute
  gemm_memory,         // GEMM weight bytes at the bandwidth x gemm_memory
  attention_compute,   // attention FLOPs (prefill)
  attention_memory,    // KV-cache bytes (decode)
  elementwise_memory,  // norms, RoPE, activations, embedding
  kernel_overhead,     // kernels x Efficiency::kernel_overhead_s
  communication,       // TP all-reduces, EP all-to-alls, pipeline sends (topology's links)
  host_transfer,       // offloaded experts over the host link
};
inline constexpr TimeFigure kAllTimeFigures[] = {TimeFigure::gemm_compute,       TimeFigure::gemm_memory,
                                                 TimeFigure::attention_compute,  TimeFigure::attention_memory,
                                                 TimeFigure::elementwise_memory, TimeFigure::kernel_overhead,
                                                 TimeFigure::communication,      TimeFigure::host_transfer};
inline constexpr size_t kTimeFigures = std::size(kAllTimeFigures);
std::string_view time_figure_name(TimeFigure f);  // "gemm_compute", ... as efficiency.json names them
std::optional<TimeFigure> parse_time_figure(std::string_view s);

// Seconds by figure, indexed by static_cast<size_t>(TimeFigure).
using FigureTimes = std::array<double, kTimeFigures>;

// A roofline term's time and the figure that set it.
struct BoundTime {
  double s = 0;
  TimeFigure figure = TimeFigure::gemm_compute;
};

}  // namespace dayzero::simulate
