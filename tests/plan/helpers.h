#pragma once
// Plans for the tests of plan/ and of the libraries above it.
#include "plan/plan.h"

namespace dayzero::plan::testing {

// A plan of attention tp x dp on pp stages, experts over ep ranks (the rest of each
// stage's ranks as expert replicas), with a small default workload.
inline Plan plan(int tp, int dp = 1, int pp = 1, int ep = 1) {
  Plan p;
  p.pp = pp;
  p.attention.tp = tp;
  p.attention.dp = dp;
  p.moe.ep = ep;
  p.moe.dp = tp * dp / ep;
  p.workload.batch = dp;
  p.workload.input_len = 1000;
  p.workload.output_len = 200;
  return p;
}

}  // namespace dayzero::plan::testing
