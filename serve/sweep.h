#pragma once
// Latency curves: one plan (or the best plan of each point, chosen by the caller)
// served at each value of one axis: the concurrency of a closed loop, the rate of a
// Poisson client, or the requests' prompt or output length. The sweep is a plain
// value with its JSON and CSV beside it: `dayzero sweep` writes both, and the GUI
// draws it (gui/sweep_chart.h), with the SLA's limits as lines.

#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/simulation.h"
#include "serve/workload.h"

namespace dayzero::serve {

enum class SweepAxis { concurrency, request_rate, input_len, output_len };
inline constexpr SweepAxis kAllSweepAxes[] = {SweepAxis::concurrency, SweepAxis::request_rate, SweepAxis::input_len,
                                              SweepAxis::output_len};
std::string_view sweep_axis_name(SweepAxis a);  // "concurrency", "request_rate", "input_len", "output_len"
std::optional<SweepAxis> parse_sweep_axis(std::string_view s);
std::string_view sweep_axis_unit(SweepAxis a);  // "requests in flight", "requests/s", "tokens", "tokens"

// The most points a sweep serves.
inline constexpr size_t kMaxSweepPoints = 64;

struct SweepPoint {
  double x = 0;
  std::string layout;  // the plan served at this point
  int64_t devices = 0;
  ServeResult served;  // series left empty
  std::string error;   // when the point could not be served (e.g. a prompt the cache cannot hold)
};

struct Sweep {
  SweepAxis axis = SweepAxis::concurrency;
  std::string title;      // model, cluster, engine
  double max_ttft_s = 0;  // the SLA's limits (0 = none), drawn as lines
  double max_tpot_s = 0;
  std::vector<SweepPoint> points;
};

// The client of one point: `base` with the axis set to `value` (a closed loop at that
// concurrency, or a Poisson client at that rate, each sending `requests_per_slot`
// requests per request in flight, at least 200, the first wave or 10 % left out as
// warm-up; or base's client with every request's prompt or output that long).
// Throws std::invalid_argument for a value the axis cannot take (not a positive
// whole number of requests or tokens, not a positive rate).
Client client_at(const Client& base, SweepAxis axis, double value);

// Serves each value with `serve_at` (the point's client; it fills the point's layout,
// devices and result, or throws std::invalid_argument, which the point records).
Sweep run_sweep(SweepAxis axis, const std::vector<double>& values, const Client& base,
                const std::function<void(const Client&, SweepPoint&)>& serve_at);

nlohmann::json sweep_to_json(const Sweep& s);
// Reads what sweep_to_json wrote; core::InputError names `file` and the field.
Sweep sweep_from_json(const nlohmann::json& j, const std::string& file);
// One row per point: x, layout, devices, TTFT / TPOT / ITL / E2E mean, p50, p90, p99 (s),
// output and total tokens/s, requests/s, error.
void write_sweep_csv(std::ostream& out, const Sweep& s);

}  // namespace dayzero::serve
