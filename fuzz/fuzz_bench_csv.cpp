// The aiconfigurator CSV of measured serving runs (serve::parse_bench_csv), as
// scenarios/fidelity/serving-measured.csv ships it.
#include "fuzz/fuzz_common.h"
#include "serve/bench_rows.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::serve;
  const std::string text(dayzero::fuzz::text_of(data, size));
  dayzero::fuzz::expect_documented_errors([&] {
    for (const BenchRow& row : parse_bench_csv(text, "rows.csv")) {
      (void)row.concurrency();
      (void)row.gpus();
    }
  });
  return 0;
}
