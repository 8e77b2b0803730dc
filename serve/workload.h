#pragma once
// Who sends the requests: benchmark clients as `vllm bench serve`, SGLang's
// bench_serving and the engines' own load generators run them.

#include <cstdint>
#include <vector>

namespace dayzero::serve {

struct RequestShape {
  int64_t input_len = 1024;
  int64_t output_len = 256;
  int64_t cached_prefix = 0;  // prompt tokens already in the prefix cache
};

// A request as the simulation sees it.
struct Request {
  double arrival_s = 0;
  RequestShape shape;
};

enum class ClientKind {
  closed_loop,  // `concurrency` requests in flight: a new one starts when one finishes
  open_loop,    // requests arrive at `rate_per_s` (Poisson) or at the trace's times
};

struct Client {
  ClientKind kind = ClientKind::closed_loop;
  int64_t concurrency = 1;  // closed loop: across the whole plan
  double rate_per_s = 0;    // open loop without a trace: across the whole plan
  int64_t requests = 1000;  // requests sent in all
  int64_t warmup = 0;       // the first requests completed that the statistics leave out
  uint64_t seed = 0;        // Poisson arrivals and drawn lengths
  RequestShape shape;       // every request's lengths, unless a trace gives them
  // Random lengths as the benchmark clients' `--random-range-ratio` draws them: each
  // request's prompt and output length uniform in [floor(ratio x length), length], drawn
  // apart (InferenceX's benchmark_serving.py, `sample_uniform`, and vLLM's random dataset
  // before 0.8). 1 = every request at `shape`'s lengths. In (0, 1].
  double range_ratio = 1.0;
  std::vector<Request> trace;  // open loop: arrival times and lengths, in order
};

}  // namespace dayzero::serve
