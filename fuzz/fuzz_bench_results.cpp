// The measured serving runs `validate --bench` and `calibrate --bench` read
// (serve::parse_bench_text): vLLM's result JSON, SGLang's JSONL, and the
// aiconfigurator CSV. The input's first byte picks the file's extension (which
// decides the format when the content does not), the rest is the file.
#include "fuzz/fuzz_common.h"
#include "serve/bench_results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::serve;
  if (size < 1) return 0;
  static const char* const kNames[] = {"results.json", "results.jsonl", "rows.csv", "results"};
  const std::string name = kNames[data[0] % 4];
  const std::string text(dayzero::fuzz::text_of(data + 1, size - 1));
  BenchDefaults d;
  if (data[0] & 4) {  // what the command line would say about runs whose file does not
    d.system = "h100_sxm";
    d.model_path = "meta-llama/Llama-3.1-8B-Instruct";
    d.engine = "vllm";
    d.tp = 1;
  }
  dayzero::fuzz::expect_documented_errors([&] {
    for (const BenchRow& row : parse_bench_text(text, name, d)) {
      (void)row.concurrency();
      (void)row.gpus();
    }
  });
  return 0;
}
