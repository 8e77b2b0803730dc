#include "serve/sweep.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::serve {

namespace {

using nlohmann::json;

constexpr const char* kStats[] = {"ttft_s", "tpot_s", "itl_s", "e2e_s"};

template <class R>  // ServeResult, const or not
auto& stat(R& r, int i) {
  switch (i) {
    case 0: return r.ttft_s;
    case 1: return r.tpot_s;
    case 2: return r.itl_s;
    default: return r.e2e_s;
  }
}

int64_t whole(double v, SweepAxis a) {
  if (!(v >= 1) || v != std::floor(v) || v > 1e12)
    throw std::invalid_argument(std::string(sweep_axis_name(a)) + " " + std::to_string(v) +
                                ": needs a whole number of at least 1");
  return static_cast<int64_t>(v);
}

// Requests per request in flight, so every point sees its steady state.
constexpr int64_t kRequestsPerSlot = 5;
constexpr int64_t kMinRequests = 200;

}  // namespace

std::string_view sweep_axis_name(SweepAxis a) {
  switch (a) {
    case SweepAxis::concurrency: return "concurrency";
    case SweepAxis::request_rate: return "request_rate";
    case SweepAxis::input_len: return "input_len";
    case SweepAxis::output_len: return "output_len";
  }
  return "?";
}

std::optional<SweepAxis> parse_sweep_axis(std::string_view s) {
  return core::parse_enum(s, kAllSweepAxes, sweep_axis_name);
}

std::string_view sweep_axis_unit(SweepAxis a) {
  switch (a) {
    case SweepAxis::concurrency: return "requests in flight";
    case SweepAxis::request_rate: return "requests/s";
    case SweepAxis::input_len:
    case SweepAxis::output_len: return "tokens";
  }
  return "?";
}

Client client_at(const Client& base, SweepAxis axis, double value) {
  Client c = base;
  switch (axis) {
    case SweepAxis::concurrency:
      c.kind = ClientKind::closed_loop;
      c.concurrency = whole(value, axis);
      c.requests = std::max(kMinRequests, kRequestsPerSlot * c.concurrency);
      c.warmup = c.concurrency;  // the first wave arrives at once on an idle engine
      break;
    case SweepAxis::request_rate:
      if (!(value > 0) || !std::isfinite(value))
        throw std::invalid_argument("request_rate " + std::to_string(value) + ": needs a positive rate");
      c.kind = ClientKind::open_loop;
      c.rate_per_s = value;
      c.trace.clear();
      c.warmup = c.requests / 10;
      break;
    case SweepAxis::input_len: c.shape.input_len = whole(value, axis); break;
    case SweepAxis::output_len: c.shape.output_len = whole(value, axis); break;
  }
  c.shape.cached_prefix = std::min(c.shape.cached_prefix, c.shape.input_len - 1);
  return c;
}

Sweep run_sweep(SweepAxis axis, const std::vector<double>& values, const Client& base,
                const std::function<void(const Client&, SweepPoint&)>& serve_at) {
  if (values.empty()) throw std::invalid_argument("a sweep needs at least one value");
  if (values.size() > kMaxSweepPoints)
    throw std::invalid_argument(std::to_string(values.size()) + " values: a sweep serves at most " +
                                std::to_string(kMaxSweepPoints));
  Sweep s;
  s.axis = axis;
  for (double v : values) {
    (void)client_at(base, axis, v);  // a bad value fails the whole sweep before any point is served
    s.points.emplace_back().x = v;
  }
  for (SweepPoint& p : s.points) {
    try {
      serve_at(client_at(base, axis, p.x), p);
      p.served.series.clear();
    } catch (const std::invalid_argument& e) {
      p.error = e.what();
    }
  }
  return s;
}

json sweep_to_json(const Sweep& s) {
  json points = json::array();
  for (const SweepPoint& p : s.points) {
    json j = {{"x", p.x}, {"layout", p.layout}, {"devices", p.devices}};
    if (!p.error.empty()) {
      j["error"] = p.error;
    } else {
      for (int i = 0; i < 4; ++i) {
        const LatencyStats& l = stat(p.served, i);
        j[kStats[i]] = {{"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"count", l.count}};
      }
      j["output_tokens_per_s"] = p.served.output_tokens_per_s;
      j["total_tokens_per_s"] = p.served.total_tokens_per_s;
      j["requests_per_s"] = p.served.requests_per_s;
    }
    points.push_back(j);
  }
  return {{"axis", sweep_axis_name(s.axis)},
          {"unit", sweep_axis_unit(s.axis)},
          {"title", s.title},
          {"sla", {{"max_ttft_s", s.max_ttft_s}, {"max_tpot_s", s.max_tpot_s}}},
          {"points", points}};
}

Sweep sweep_from_json(const json& j, const std::string& file) {
  if (!j.is_object()) throw core::InputError(file, "", "", "a sweep must be a JSON object");
  core::Fields f(j, file);
  Sweep s;
  const std::string axis = f.req_string("axis");
  const auto a = parse_sweep_axis(axis);
  if (!a) f.fail("axis", "unknown sweep axis (one of: " + core::enum_names(kAllSweepAxes, sweep_axis_name) + ")");
  s.axis = *a;
  f.skip("unit");
  s.title = f.opt_string("title", "");
  if (const json* sla = f.opt_object("sla")) {
    core::Fields l(*sla, file, "sla.");
    s.max_ttft_s = l.opt_non_negative("max_ttft_s", 0);
    s.max_tpot_s = l.opt_non_negative("max_tpot_s", 0);
    l.reject_unknown();
  }
  const json* points = f.opt("points");
  if (!points || !points->is_array()) f.fail("points", "needs an array of points");
  if (points->size() > kMaxSweepPoints) f.fail("points", "holds more than " + std::to_string(kMaxSweepPoints));
  for (size_t k = 0; k < points->size(); ++k) {
    const std::string at = "points[" + std::to_string(k) + "].";
    if (!(*points)[k].is_object()) throw core::InputError(file, at, "", "a point must be an object");
    core::Fields p((*points)[k], file, at);
    SweepPoint pt;
    pt.x = p.req_positive("x");
    pt.layout = p.opt_string("layout", "");
    pt.devices = p.opt_int("devices", 0, 0);
    pt.error = p.opt_string("error", "");
    for (int i = 0; i < 4; ++i) {
      const json* o = p.opt_object(kStats[i]);
      if (!o) continue;
      core::Fields l(*o, file, at + kStats[i] + ".");
      LatencyStats& st = stat(pt.served, i);
      st.mean = l.opt_non_negative("mean", 0);
      st.p50 = l.opt_non_negative("p50", 0);
      st.p90 = l.opt_non_negative("p90", 0);
      st.p99 = l.opt_non_negative("p99", 0);
      st.count = l.opt_int("count", 0, 0);
      l.reject_unknown();
    }
    pt.served.output_tokens_per_s = p.opt_non_negative("output_tokens_per_s", 0);
    pt.served.total_tokens_per_s = p.opt_non_negative("total_tokens_per_s", 0);
    pt.served.requests_per_s = p.opt_non_negative("requests_per_s", 0);
    p.reject_unknown();
    s.points.push_back(pt);
  }
  f.reject_unknown();
  return s;
}

void write_sweep_csv(std::ostream& out, const Sweep& s) {
  out << sweep_axis_name(s.axis) << ",layout,devices";
  for (const char* k : kStats)
    for (const char* q : {"mean", "p50", "p90", "p99"}) out << ',' << k << '_' << q;
  out << ",output_tokens_per_s,total_tokens_per_s,requests_per_s,error\n";
  auto quoted = [](const std::string& v) {
    std::string q = "\"";
    for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const SweepPoint& p : s.points) {
    out << p.x << ',' << quoted(p.layout) << ',' << p.devices;
    for (int i = 0; i < 4; ++i) {
      const LatencyStats& l = stat(p.served, i);
      if (p.error.empty()) out << ',' << l.mean << ',' << l.p50 << ',' << l.p90 << ',' << l.p99;
      else out << ",,,,";
    }
    if (p.error.empty())
      out << ',' << p.served.output_tokens_per_s << ',' << p.served.total_tokens_per_s << ',' << p.served.requests_per_s
          << ",\n";
    else out << ",,," << quoted(p.error) << '\n';
  }
}

}  // namespace dayzero::serve
