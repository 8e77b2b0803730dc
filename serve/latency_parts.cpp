#include "serve/latency_parts.h"

namespace dayzero::serve {

double LatencyParts::total_s() const {
  double t = step_overhead_s + request_overhead_s + kv_transfer_s + handoff_s;
  for (double v : figure_s) t += v;
  return t;
}

LatencyParts& LatencyParts::operator+=(const LatencyParts& o) {
  for (size_t f = 0; f < figure_s.size(); ++f) figure_s[f] += o.figure_s[f];
  step_overhead_s += o.step_overhead_s;
  request_overhead_s += o.request_overhead_s;
  kv_transfer_s += o.kv_transfer_s;
  handoff_s += o.handoff_s;
  handoffs += o.handoffs;
  inflight += o.inflight;
  steps += o.steps;
  return *this;
}

LatencyParts LatencyParts::operator-(const LatencyParts& o) const {
  LatencyParts d = *this;
  for (size_t f = 0; f < figure_s.size(); ++f) d.figure_s[f] -= o.figure_s[f];
  d.step_overhead_s -= o.step_overhead_s;
  d.request_overhead_s -= o.request_overhead_s;
  d.kv_transfer_s -= o.kv_transfer_s;
  d.handoff_s -= o.handoff_s;
  d.handoffs -= o.handoffs;
  d.inflight -= o.inflight;
  d.steps -= o.steps;
  return d;
}

LatencyParts LatencyParts::operator*(double k) const {
  LatencyParts d = *this;
  for (double& v : d.figure_s) v *= k;
  d.step_overhead_s *= k;
  d.request_overhead_s *= k;
  d.kv_transfer_s *= k;
  d.handoff_s *= k;
  d.handoffs *= k;
  d.inflight *= k;
  d.steps *= k;
  return d;
}

}  // namespace dayzero::serve
