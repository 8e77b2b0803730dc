#include "serve/bench_results.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_fields.h"
#include "serve/bench_result_run.h"

namespace dayzero::serve {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& file) { return core::read_input_file(file); }

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Python's json module writes inf and nan as the bare words Infinity, -Infinity and NaN
// (SGLang's `request_rate` of an unlimited run is one), which JSON lacks. Outside
// strings they become the strings "Infinity", "-Infinity" and "NaN": accepted where a
// rate may be unlimited, rejected as "expected a number" everywhere else.
std::string quote_python_constants(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const std::string_view word : {"-Infinity", "Infinity", "NaN"}) {
      const bool starts_word = i == 0 || !is_word_char(text[i - 1]);
      const size_t end = i + word.size();
      if (starts_word && text.substr(i, word.size()) == word && (end == text.size() || !is_word_char(text[end]))) {
        out += '"';
        out += word;
        out += '"';
        i = end - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

struct RunText {
  int64_t line = 1;
  json value;
};

json parse_at(std::string_view text, const std::string& file, int64_t first_line) {
  try {
    return core::parse_json_text(text, file);  // nesting, repeated keys, ranges: core/json_fields.h
  } catch (const core::JsonTextError& e) {
    if (first_line == 1) throw;
    // One line of a JSONL file: its line in the file, the column within it.
    const int64_t line = first_line + static_cast<int64_t>(e.line()) - 1;
    throw core::InputError(file, "line " + std::to_string(line), "",
                           "not valid JSON at column " + std::to_string(e.column()) + ": " +
                               (e.detail().empty() ? e.problem() : e.detail()));
  }
}

// The file's runs: one JSON object per non-empty line (SGLang's JSONL, vLLM's
// --append-result) when there are several lines and each starts with '{', else the
// whole text as one run (vLLM's --save-result, pretty-printed or not).
std::vector<RunText> split_runs(const std::string& raw, const std::string& file) {
  const std::string text = quote_python_constants(raw);
  std::vector<std::pair<int64_t, std::string_view>> lines;
  std::string_view rest = text;
  for (int64_t n = 1; !rest.empty(); ++n) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) lines.emplace_back(n, line.substr(first));
  }
  if (lines.empty()) throw core::InputError(file, "", "", "empty file: no runs");
  const bool per_line =
      lines.size() > 1 && std::all_of(lines.begin(), lines.end(), [](const auto& l) { return l.second[0] == '{'; });
  std::vector<RunText> runs;
  if (per_line) {
    for (const auto& [n, line] : lines) runs.push_back({n, parse_at(line, file, n)});
  } else {
    runs.push_back({lines.front().first, parse_at(text, file, 1)});
  }
  return runs;
}

bool has_any(const json& v, std::initializer_list<const char*> keys) {
  return v.is_object() && std::any_of(keys.begin(), keys.end(), [&](const char* k) { return v.contains(k); });
}

// Which client wrote the file: keys only one of them writes, else the extension.
BenchTool tool_of(const json& first_run, const fs::path& file) {
  if (has_any(first_run, {"total_output_tokens_retokenized"})) return BenchTool::sglang;
  if (has_any(first_run, {"model_id", "num_prompts", "endpoint_type"})) return BenchTool::vllm;
  if (has_any(first_run, {"dataset_name", "random_input_len"})) return BenchTool::sglang;
  return file.extension() == ".jsonl" ? BenchTool::sglang : BenchTool::vllm;
}

std::vector<BenchRow> rows_of(const std::vector<RunText>& runs, const fs::path& file, BenchTool tool,
                              const BenchDefaults& d) {
  std::vector<BenchRow> rows;
  RunSource src;
  src.file = file.string();
  src.stem = file.stem().string();
  src.tool = tool;
  for (const RunText& run : runs) {
    src.line = run.line;
    rows.push_back(bench_row_of(run.value, src, d));
    ++src.run;
  }
  return rows;
}

}  // namespace

std::vector<BenchRow> read_vllm_results(const fs::path& file, const BenchDefaults& d) {
  return rows_of(split_runs(read_text(file), file.string()), file, BenchTool::vllm, d);
}

std::vector<BenchRow> read_sglang_results(const fs::path& file, const BenchDefaults& d) {
  return rows_of(split_runs(read_text(file), file.string()), file, BenchTool::sglang, d);
}

std::vector<BenchRow> read_bench_file(const fs::path& file, const BenchDefaults& d) {
  return parse_bench_text(read_text(file), file, d);
}

std::vector<BenchRow> parse_bench_text(const std::string& text, const fs::path& file, const BenchDefaults& d) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  const std::string ext = file.extension().string();
  const bool json_text = (first != std::string::npos && text[first] == '{') || ext == ".json" || ext == ".jsonl";
  if (!json_text) return parse_bench_csv(text, file.string());
  const std::vector<RunText> runs = split_runs(text, file.string());
  return rows_of(runs, file, tool_of(runs.front().value, file), d);
}

}  // namespace dayzero::serve
