#pragma once
// Measured serving runs from the files the benchmark clients write, as BenchRows
// (serve/bench_rows.h) that `validate --bench` predicts like the CSV's rows:
//
// - `vllm bench serve --save-result` (or --append-result): one JSON object per run,
//   the client's arguments, its `--metadata KEY=VALUE` pairs merged into the top
//   level, and the measured statistics (vllm-project/vllm, vllm/benchmarks/serve.py,
//   `main_async` (result_json) and `benchmark` (result, process_one_metric));
// - `python -m sglang.bench_serving --output-file F`: one JSON object per line,
//   appended per run (sgl-project/sglang, python/sglang/bench_serving.py,
//   `benchmark`, the `result` dict written to the JSONL file).
//
// Neither file says where the run was served: the GPU system, the model's Hugging
// Face id and the layout come from keys in the run's object (vLLM: `--metadata
// system=h100_sxm tp=1 ...`) and, failing that, from BenchDefaults (the command
// line). Keys and flags: scenarios/fidelity/README.md, "Result files of vLLM and
// SGLang".

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "serve/bench_rows.h"

namespace dayzero::serve {

// What the command line says about runs whose file does not: each is used only when
// the run's object lacks the key. `flag` names are the hints in error messages.
struct BenchDefaults {
  std::string system;      // --system: h100_sxm, h200_sxm, b200_sxm, ... (scenarios/fidelity/systems.json)
  std::string model_path;  // --model: the Hugging Face id
  std::string engine;      // --engine: the server behind an OpenAI-compatible endpoint type
  std::optional<int64_t> tp, pp, attention_dp, moe_tp, moe_ep;  // --tp --pp --dp --moe-tp --ep
  std::optional<std::string> gemm_quant, moe_quant;             // --quant --moe-quant
};

// The two result formats of the serving benchmark clients.
enum class BenchTool { vllm, sglang };

// Every run of a vLLM result file: one object (pretty-printed or not), or one object
// per line (--append-result).
std::vector<BenchRow> read_vllm_results(const std::filesystem::path& file, const BenchDefaults& d);
// Every run of an SGLang JSONL file: one object per line.
std::vector<BenchRow> read_sglang_results(const std::filesystem::path& file, const BenchDefaults& d);

// The file's runs, whatever its format: content that does not start with '{' is the
// aiconfigurator CSV (read_bench_csv, which ignores `d`); JSON is SGLang's when its
// first object has SGLang's keys (`total_output_tokens_retokenized`, `dataset_name`),
// vLLM's when it has vLLM's (`model_id`, `num_prompts`, `endpoint_type`), and else
// by extension (.jsonl: SGLang; otherwise vLLM). Bad content is a core::InputError
// naming the file, the run (its line) and the field.
std::vector<BenchRow> read_bench_file(const std::filesystem::path& file, const BenchDefaults& d);
// The same from the file's text: `file` (its extension when the content does not
// decide) is only looked at, never read.
std::vector<BenchRow> parse_bench_text(const std::string& text, const std::filesystem::path& file,
                                       const BenchDefaults& d);

}  // namespace dayzero::serve
