// The result files of `vllm bench serve` and `sglang.bench_serving` as BenchRows:
// every mapped field of the fixtures in tests/serve/data (the clients' own shapes),
// the layout from the run's keys or the command line, and the errors that name the
// file, the run's line and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "serve/bench_results.h"

namespace dayzero::serve {
namespace {

namespace fs = std::filesystem;

const fs::path kData = DAYZERO_SERVE_DATA_DIR;

fs::path write_file(const std::string& name, const std::string& body) {
  const fs::path dir = fs::temp_directory_path() / ("dayzero_bench_results_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << body;
  return dir / name;
}

std::string error_of(const std::string& name, const std::string& body, const BenchDefaults& d = {}) {
  try {
    read_bench_file(write_file(name, body), d);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

BenchDefaults h100_tp1() {
  BenchDefaults d;
  d.system = "h100_sxm";
  d.tp = 1;
  return d;
}

// A vLLM run with only what the client writes (no --metadata): the layout from the flags.
TEST(BenchResults, VllmRunWithTheLayoutFromTheCommandLine) {
  const fs::path file = kData / "vllm_serve_llama8b_c8.json";
  const auto rows = read_bench_file(file, h100_tp1());
  ASSERT_EQ(rows.size(), 1u);
  const BenchRow& r = rows[0];
  EXPECT_EQ(r.id, "vllm_serve_llama8b_c8:1");
  EXPECT_EQ(r.file, file.string());
  EXPECT_EQ(r.line, 1);
  EXPECT_EQ(r.mode, "agg");
  EXPECT_EQ(r.backend, "vllm");
  EXPECT_EQ(r.backend_version, "");
  EXPECT_EQ(r.model_path, "meta-llama/Llama-3.1-8B-Instruct");  // model_id
  EXPECT_EQ(r.system, "h100_sxm");
  EXPECT_EQ(r.gemm_quant, "");
  EXPECT_EQ(r.moe_quant, "");
  EXPECT_EQ(r.isl, 1000);      // total_input_tokens 32000 / completed 32
  EXPECT_EQ(r.osl, 200);       // 6400 / 32
  EXPECT_EQ(r.batch_size, 8);  // max_concurrency
  EXPECT_EQ(r.concurrency(), 8);
  EXPECT_EQ(r.tp, 1);
  EXPECT_EQ(r.pp, 1);
  EXPECT_EQ(r.attention_dp, 1);
  EXPECT_EQ(r.moe_tp, 1);
  EXPECT_EQ(r.moe_ep, 1);
  EXPECT_EQ(r.request_rate_per_s, 0);  // "inf": closed loop at max_concurrency
  EXPECT_EQ(r.requests, 32);           // num_prompts
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.04127);
  EXPECT_DOUBLE_EQ(r.tpot_s, 0.00712);
  EXPECT_DOUBLE_EQ(r.ttft_p50_s, 0.03895);
  EXPECT_DOUBLE_EQ(r.ttft_p99_s, 0.0724);
  EXPECT_DOUBLE_EQ(r.tpot_p50_s, 0.00709);
  EXPECT_DOUBLE_EQ(r.tpot_p99_s, 0.00761);
  EXPECT_EQ(read_vllm_results(file, h100_tp1())[0].id, r.id);
  BenchDefaults sglang = h100_tp1();
  sglang.engine = "sglang";  // the client's "vllm" is an endpoint type: any OpenAI-compatible server
  EXPECT_EQ(read_bench_file(file, sglang)[0].backend, "sglang");
}

// --metadata keys win over the flags; per-request lengths (--save-detailed) give the
// means of the completed requests; a finite rate without a cap is an open loop.
TEST(BenchResults, VllmMetadataDetailedLengthsAndAnOpenLoop) {
  BenchDefaults d;
  d.system = "b200_sxm";  // the run says h200_sxm
  d.tp = 8;               // the run says 4
  const auto rows = read_bench_file(kData / "vllm_serve_detailed_metadata.json", d);
  ASSERT_EQ(rows.size(), 1u);
  const BenchRow& r = rows[0];
  EXPECT_EQ(r.system, "h200_sxm");
  EXPECT_EQ(r.model_path, "meta-llama/Llama-3.1-70B-Instruct");
  EXPECT_EQ(r.backend, "vllm");  // openai-chat: an endpoint type; vLLM's server unless --engine
  EXPECT_EQ(r.backend_version, "0.11.0");
  EXPECT_EQ(r.tp, 4);  // "4": --metadata writes strings
  EXPECT_EQ(r.pp, 2);
  EXPECT_EQ(r.attention_dp, 1);
  EXPECT_EQ(r.moe_ep, 1);
  EXPECT_EQ(r.moe_tp, 4);  // tp x dp / ep
  EXPECT_EQ(r.gemm_quant, "fp8");
  EXPECT_EQ(r.moe_quant, "fp8");  // the GEMMs'
  EXPECT_EQ(r.isl, 511);          // (512 + 512 + 509) / 3: the failed request (0 output tokens) left out
  EXPECT_EQ(r.osl, 8);
  EXPECT_DOUBLE_EQ(r.request_rate_per_s, 2.0);
  EXPECT_EQ(r.requests, 4);
  EXPECT_EQ(r.batch_size, 2);  // no cap: all 4 requests may be in flight, over pp = 2 stages
  EXPECT_EQ(r.concurrency(), 4);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.2117);
  EXPECT_DOUBLE_EQ(r.tpot_s, 0.03005);
  d.engine = "sglang";
  EXPECT_EQ(read_bench_file(kData / "vllm_serve_detailed_metadata.json", d)[0].backend, "sglang");
}

TEST(BenchResults, SglangRunsOnePerLine) {
  BenchDefaults d;
  d.system = "b200_sxm";
  d.model_path = "meta-llama/Llama-3.1-8B-Instruct";
  d.tp = 2;
  d.gemm_quant = "fp8";
  const fs::path file = kData / "sglang_bench_serving.jsonl";
  const auto rows = read_bench_file(file, d);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, "sglang_bench_serving:" + std::to_string(i + 1));
    EXPECT_EQ(rows[i].line, static_cast<int64_t>(i + 1));
    EXPECT_EQ(rows[i].file, file.string());
    EXPECT_EQ(rows[i].mode, "agg");
    EXPECT_EQ(rows[i].system, "b200_sxm");
    EXPECT_EQ(rows[i].model_path, "meta-llama/Llama-3.1-8B-Instruct");
    EXPECT_EQ(rows[i].tp, 2);
    EXPECT_EQ(rows[i].pp, 1);
    EXPECT_EQ(rows[i].moe_tp, 2);
    EXPECT_EQ(rows[i].gemm_quant, "fp8");
    EXPECT_EQ(rows[i].moe_quant, "fp8");
  }
  // --backend sglang, unlimited rate (Infinity), --max-concurrency 16, 1024 / 1024.
  EXPECT_EQ(rows[0].backend, "sglang");
  EXPECT_EQ(rows[0].request_rate_per_s, 0);
  EXPECT_EQ(rows[0].batch_size, 16);
  EXPECT_EQ(rows[0].requests, 64);  // completed: SGLang writes no num_prompts
  EXPECT_EQ(rows[0].isl, 1024);
  EXPECT_EQ(rows[0].osl, 1024);
  EXPECT_DOUBLE_EQ(rows[0].ttft_s, 0.0884);
  EXPECT_DOUBLE_EQ(rows[0].ttft_p50_s, 0.0801);
  EXPECT_DOUBLE_EQ(rows[0].ttft_p99_s, 0.1402);
  EXPECT_DOUBLE_EQ(rows[0].tpot_s, 0.0146);
  EXPECT_DOUBLE_EQ(rows[0].tpot_p50_s, 0.0145);
  EXPECT_DOUBLE_EQ(rows[0].tpot_p99_s, 0.0153);
  // --backend sglang-oai, 4 requests/s, no cap: an open loop of 100 requests, 153600 / 100 and 19200 / 100.
  EXPECT_EQ(rows[1].backend, "sglang");
  EXPECT_DOUBLE_EQ(rows[1].request_rate_per_s, 4.0);
  EXPECT_EQ(rows[1].batch_size, 100);
  EXPECT_EQ(rows[1].isl, 1536);
  EXPECT_EQ(rows[1].osl, 192);
  // --backend trt (TensorRT-LLM), sharegpt: 45789 / 200 = 228.9 and 40312 / 200 = 201.6 tokens.
  EXPECT_EQ(rows[2].backend, "trtllm");
  EXPECT_EQ(rows[2].batch_size, 32);
  EXPECT_EQ(rows[2].isl, 229);
  EXPECT_EQ(rows[2].osl, 202);
  EXPECT_DOUBLE_EQ(rows[2].tpot_s, 0.0221);
  EXPECT_EQ(read_sglang_results(file, d).size(), 3u);
}

// The format comes from the content: SGLang's keys in a .json, a CSV by its header.
TEST(BenchResults, TheFormatFollowsTheContent) {
  BenchDefaults d = h100_tp1();
  std::ifstream in(kData / "sglang_bench_serving.jsonl");
  std::string first;
  std::getline(in, first);
  const fs::path sglang = write_file("sglang.json", first + "\n");
  EXPECT_NE(error_of("sglang.json", first + "\n", d).find("sglang.bench_serving records no metadata"),
            std::string::npos);
  d.model_path = "meta-llama/Llama-3.1-8B-Instruct";
  EXPECT_EQ(read_bench_file(sglang, d)[0].backend, "sglang");
  const auto csv = read_bench_file(
      write_file("rows.csv",
                 "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,"
                 "tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
                 "r1,vllm,,m,h100_sxm,agg,100,10,,,4,1,1,1,,,50,10\n"),
      d);
  ASSERT_EQ(csv.size(), 1u);
  EXPECT_EQ(csv[0].id, "r1");
  EXPECT_EQ(csv[0].request_rate_per_s, 0);
  EXPECT_EQ(csv[0].requests, 0);
  // vLLM's --append-result: one object per line.
  std::ifstream v(kData / "vllm_serve_llama8b_c8.json");
  const std::string run((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>());
  const auto appended = read_bench_file(write_file("appended.json", run + "\n" + run), d);
  ASSERT_EQ(appended.size(), 2u);
  EXPECT_EQ(appended[1].id, "appended:2");
  EXPECT_EQ(appended[1].line, 2);
}

// The text entry point (which read_bench_file calls): the same rows, the name's
// extension consulted but the file never read.
TEST(BenchResults, TextReadsAsItsFileWould) {
  const fs::path file = kData / "vllm_serve_llama8b_c8.json";
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto rows = parse_bench_text(text, "/nonexistent/vllm_serve_llama8b_c8.json", h100_tp1());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "vllm_serve_llama8b_c8:1");
  EXPECT_EQ(rows[0].isl, read_bench_file(file, h100_tp1())[0].isl);
  EXPECT_THROW(parse_bench_text("", "/nonexistent/rows.csv", {}), core::InputError);
}

// A vLLM run as the client writes it, with `fields` replacing or adding keys.
// A vLLM run with `fields` added; a field it names replaces the base's (a JSON object
// may not repeat a key).
std::string vllm_run(const std::string& fields) {
  const std::vector<std::pair<std::string, std::string>> base = {{"date", "\"20250612-141503\""},
                                                                 {"backend", "\"vllm\""},
                                                                 {"model_id", "\"meta-llama/Llama-3.1-8B-Instruct\""},
                                                                 {"num_prompts", "32"},
                                                                 {"request_rate", "\"inf\""},
                                                                 {"max_concurrency", "8"},
                                                                 {"completed", "32"},
                                                                 {"total_input_tokens", "32000"},
                                                                 {"total_output_tokens", "6400"}};
  std::string run = "{";
  for (const auto& [key, value] : base)
    if (fields.find("\"" + key + "\"") == std::string::npos) run += "\"" + key + "\": " + value + ", ";
  return run + fields + "}";
}
const std::string kLatencies = "\"mean_ttft_ms\": 41.2, \"mean_tpot_ms\": 7.1";

TEST(BenchResults, BadRunsNameTheFileTheLineAndTheField) {
  const BenchDefaults d = h100_tp1();
  EXPECT_NE(error_of("a.json", vllm_run("\"mean_tpot_ms\": 7.1"), d)
                .find("a.json: field 'line 1 mean_ttft_ms': required field is missing"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run("\"mean_ttft_ms\": 41.2"), d).find("'line 1 mean_tpot_ms'"), std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run("\"mean_ttft_ms\": 41.2, \"mean_tpot_ms\": -1.5"), d)
                .find("field 'line 1 mean_tpot_ms' = -1.5: a latency must be positive"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run("\"mean_ttft_ms\": \"fast\", \"mean_tpot_ms\": 7.1"), d)
                .find("field 'line 1 mean_ttft_ms' = \"fast\": expected a number of milliseconds"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run("\"mean_ttft_ms\": NaN, \"mean_tpot_ms\": 7.1"), d)
                .find("expected a number of milliseconds"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"p99_ttft_ms\": -4"), d).find("'line 1 p99_ttft_ms'"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"backend\": \"tgi\""), d)
                .find("field 'line 1 backend' = \"tgi\": not an engine DayZero models (vllm, sglang, trtllm)"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"completed\": 0"), d).find("'line 1 completed' = 0"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"tp\": \"two\""), d)
                .find("field 'line 1 tp' = \"two\": expected a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"gemm_quant\": \"fp6\""), d)
                .find("field 'line 1 gemm_quant' = \"fp6\": expected one of"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"request_rate\": -2"), d).find("'line 1 request_rate'"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"request_rate\": 4.0, \"burstiness\": 0.5"), d)
                .find("'line 1 burstiness' = 0.5: arrivals other than Poisson"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"ramp_up_strategy\": \"linear\""), d)
                .find("'line 1 ramp_up_strategy'"),
            std::string::npos);
  EXPECT_NE(
      error_of("a.json", vllm_run(kLatencies + ", \"input_lens\": [10, \"x\"]"), d).find("'line 1 input_lens' = \"x\""),
      std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"max_concurrency\": null"), d)
                .find("field 'line 1 max_concurrency': missing, and the request rate is unlimited"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"max_concurrency\": 9, \"attention_dp\": 2"), d)
                .find("'line 1 max_concurrency' = 9: not a multiple of pp x attention_dp = 2"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", "{\"backend\": \"vllm\",\n \"completed\": }")
                .find("a.json: not valid JSON: malformed JSON at line 2, column 15"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", "  \n").find("a.json: empty file: no runs"), std::string::npos);
  const std::string run = vllm_run(kLatencies);
  EXPECT_NE(error_of("b.jsonl", run + "\n" + run.substr(0, 40) + "\n", d).find("b.jsonl: field 'line 2': not valid"),
            std::string::npos);
  // Issue 16: these readers parsed with no guard. A line repeating a key, or nested
  // 60,000 deep (which overflowed the stack), is an error naming its line.
  EXPECT_NE(error_of("c.jsonl", run + "\n{\"a\": 1, \"a\": 2}\n", d)
                .find("c.jsonl: field 'line 2': not valid JSON at column 10: key appears twice"),
            std::string::npos);
  EXPECT_NE(error_of("d.jsonl", run + "\n{\"a\": " + std::string(60'000, '[') + "\n", d)
                .find("d.jsonl: field 'line 2': not valid JSON at column"),
            std::string::npos);
}

// The layout is required where it cannot be defaulted: the message says which flag gives it.
TEST(BenchResults, AMissingLayoutNamesTheFlag) {
  const std::string run = vllm_run(kLatencies);
  BenchDefaults d;
  EXPECT_NE(error_of("a.json", run, d)
                .find("a.json: field 'line 1 system': missing: the GPU system the run was served on (e.g. h100_sxm); "
                      "pass --system or record it in the run (vllm bench serve --metadata system=...)"),
            std::string::npos);
  d.system = "h100_sxm";
  EXPECT_NE(error_of("a.json", run, d).find("field 'line 1 tp': missing: the run's tensor-parallel size; pass --tp"),
            std::string::npos);
  d.tp = 0;
  EXPECT_NE(error_of("a.json", run, d).find("field 'line 1 tp' = 0: from --tp: must be positive"), std::string::npos);
  d.tp = 1;
  d.engine = "tgi";
  EXPECT_NE(error_of("a.json", run, d).find("from --engine"), std::string::npos);
  // SGLang's runs name no model: --model (or a key added to the line).
  BenchDefaults s = h100_tp1();
  std::ifstream in(kData / "sglang_bench_serving.jsonl");
  const std::string lines((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(error_of("s.jsonl", lines, s)
                .find("s.jsonl: field 'line 1 model_path': missing: the model's Hugging Face id; pass --model or add "
                      "\"model_path\" to the run's line (sglang.bench_serving records no metadata)"),
            std::string::npos);
}

// Found while fuzzing (issue 16: an input for fuzz_bench_csv, under UBSan): a row's sizes had no upper bound, so
// batch_size 2^63-1 with pp_size 2 overflowed concurrency() (batch x pp x attention_dp,
// undefined behaviour), as a result file's tp x attention_dp did. Every size is now
// bounded where it is read: layouts by the devices a cluster may have, batches by a
// plan's largest, token means by its longest sequence, requests by 2^40.
TEST(BenchResults, SizesAreBoundedSoRowProductsFitIn64Bits) {
  const std::string header =
      "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,"
      "tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
  EXPECT_NE(error_of("rows.csv", header + "r1,vllm,,m,h100_sxm,agg,100,10,,,9223372036854775807,1,2,1,,,50,10\n")
                .find("field 'row 2 (r1) batch_size' = \"9223372036854775807\": must be at most 67108864"),
            std::string::npos);
  EXPECT_NE(error_of("rows.csv", header + "r1,vllm,,m,h100_sxm,agg,100,10,,,4,16385,1,1,,,50,10\n")
                .find("tp_size' = \"16385\": must be at most 16384"),
            std::string::npos);
  EXPECT_NE(error_of("rows.csv", header + "r1,vllm,,m,h100_sxm,agg,1073741825,10,,,4,1,1,1,,,50,10\n")
                .find("isl' = \"1073741825\": must be at most 1073741824"),
            std::string::npos);
  const auto max = parse_bench_csv(header + "r1,vllm,,m,h100_sxm,agg,100,10,,,67108864,1,16384,16384,,,50,10\n", "r");
  EXPECT_EQ(max[0].concurrency(), int64_t{1} << 54);  // the largest product, exact

  const BenchDefaults d = h100_tp1();
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"tp\": 9223372036854775807, \"attention_dp\": 2"), d)
                .find("field 'line 1 tp' = 9223372036854775807: must be at most 16384"),
            std::string::npos);
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies + ", \"max_concurrency\": 9223372036854775807"), d)
                .find("max_concurrency' = 9223372036854775807: must be at most 67108864"),
            std::string::npos);
  EXPECT_NE(
      error_of("a.json", vllm_run(kLatencies + ", \"completed\": 1, \"total_input_tokens\": 9223372036854775807"), d)
          .find("must be at most 1073741824"),
      std::string::npos);
  BenchDefaults wide = d;
  wide.tp = int64_t{1} << 40;
  EXPECT_NE(error_of("a.json", vllm_run(kLatencies), wide).find("from --tp: must be at most 16384"), std::string::npos);
}

}  // namespace
}  // namespace dayzero::serve
