#include "serve/bench_rows.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "plan/plan.h"
#include "serve/inferencex_layouts.h"

namespace dayzero::serve {

namespace {

// One CSV record: fields split at commas, double quotes around a field allowed, spaces
// and tabs around a field not part of it (a hand-edited file's ", ").
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (ch == '"') quoted = false;
      else out.back() += ch;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else if (ch != '\r') {
      out.back() += ch;
    }
  }
  for (std::string& f : out) {
    const size_t first = f.find_first_not_of(" \t");
    f = first == std::string::npos ? std::string() : f.substr(first, f.find_last_not_of(" \t") - first + 1);
  }
  return out;
}

class RowReader {
 public:
  RowReader(const std::string& file, const std::map<std::string, size_t>& columns) : file_(file), columns_(columns) {}

  void start(std::vector<std::string> fields, int64_t line) {
    fields_ = std::move(fields);
    line_ = line;
    id_ = fields_.size() > columns_.at("id") ? fields_[columns_.at("id")] : "";
  }
  const std::string& text(const std::string& key) const { return fields_.at(columns_.at(key)); }
  bool has(const std::string& key) const { return columns_.count(key) > 0; }
  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) const {
    std::string s = text(key);
    if (s.empty()) return fallback;
    // "128.0": an integer written as a float (pandas writes a column with gaps so).
    if (const size_t dot = s.find('.');
        dot != std::string::npos && dot > 0 && s.find_first_not_of('0', dot + 1) == std::string::npos)
      s.resize(dot);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size()) fail(key, s, "expected an integer");
    if (v < min) fail(key, s, "must be at least " + std::to_string(min));
    if (v > max) fail(key, s, "must be at most " + std::to_string(max));
    return v;
  }
  double latency_s(const std::string& key) const {  // a positive time in ms, as seconds
    const std::string& s = text(key);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (s.empty() || used != s.size() || !std::isfinite(v)) fail(key, s, "expected a number of milliseconds");
    if (!(v > 0)) fail(key, s, "a latency must be positive");
    return v / 1e3;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& problem) const {
    throw core::InputError(file_, "row " + std::to_string(line_) + " (" + id_ + ") " + key, "\"" + value + "\"",
                           problem);
  }
  int64_t line() const { return line_; }
  const std::string& id() const { return id_; }

 private:
  std::string file_;
  const std::map<std::string, size_t>& columns_;
  std::vector<std::string> fields_;
  int64_t line_ = 0;
  std::string id_;
};

const char* const kColumns[] = {
    "id",          "backend",         "backend_version", "model_path",     "system",  "mode",    "isl",
    "osl",         "gemm_quant_mode", "moe_quant_mode",  "batch_size",     "tp_size", "pp_size", "attention_dp_size",
    "moe_tp_size", "moe_ep_size",     "silicon_ttft_ms", "silicon_tpot_ms"};

// The concurrency the publisher's tool recorded for the run, where
// silicon_data_source holds "...; silicon_concurrency=N; ..."; 0 when it does not.
int64_t recorded_concurrency(const RowReader& r) {
  if (!r.has("silicon_data_source")) return 0;
  const std::string& s = r.text("silicon_data_source");
  const std::string key = "silicon_concurrency=";
  const size_t at = s.find(key);
  if (at == std::string::npos) return 0;
  int64_t v = 0;
  size_t i = at + key.size();
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + (s[i] - '0');
    if (v > plan::kMaxBatch)
      r.fail("silicon_data_source", s.substr(at, 40), "silicon_concurrency is implausibly large");
  }
  if (i == at + key.size() || v == 0)
    r.fail("silicon_data_source", s.substr(at, 40), "silicon_concurrency must be a positive integer");
  return v;
}

// The id's "<digits>x<digits>_c_" with nothing between `_c` and the next `_`: the
// generator names a run's concurrency there ("..._agg_4000x1000_c224_tp4_...") and left
// it empty where its source did not record one.
bool id_leaves_concurrency_empty(const std::string& id) {
  for (size_t at = id.find("_c_"); at != std::string::npos; at = id.find("_c_", at + 1)) {
    size_t i = at;
    size_t digits = 0;
    while (i > 0 && id[i - 1] >= '0' && id[i - 1] <= '9') --i, ++digits;
    if (digits > 0 && i > 0 && id[i - 1] == 'x') return true;
  }
  return false;
}

// "YYYY-MM-DD": ten characters, digits with dashes at 4 and 7.
bool is_date(const std::string& d) {
  return d.size() == 10 && d[4] == '-' && d[7] == '-' &&
         std::all_of(d.begin(), d.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
}

// InferenceX's runs, by how the publisher filed them: from a database dump
// ("db-dump/2026-04-27; config_id=...") or a dated export ("source_file=2026-04-06.csv");
// the gap-analysis harness's by its data folder ("source_file=/.../aic-auto-gap-analysis/data/
// h100_sxm/sglang/0.5.1.post1/...").
Deployer deployer_of(const RowReader& r) {
  if (!r.has("silicon_data_source")) return Deployer::generator;
  const std::string& s = r.text("silicon_data_source");
  if (s.rfind("db-dump/", 0) == 0) return Deployer::inferencex;
  const std::string key = "source_file=";
  if (s.rfind(key, 0) != 0) return Deployer::generator;
  if (s.find("/aic-auto-gap-analysis/", key.size()) < s.find(';')) return Deployer::gap_analysis;
  const std::string file = s.substr(key.size(), 14);  // YYYY-MM-DD.csv
  const bool dated = file.size() == 14 && is_date(file.substr(0, 10)) && file.compare(10, 4, ".csv") == 0;
  return dated ? Deployer::inferencex : Deployer::generator;
}

// The day the run was measured, where silicon_data_source holds "measured=YYYY-MM-DD...".
std::string measured_date(const RowReader& r) {
  if (!r.has("silicon_data_source")) return "";
  const std::string& s = r.text("silicon_data_source");
  const size_t at = s.find("measured=");
  if (at == std::string::npos) return "";
  const std::string d = s.substr(at + 9, 10);
  return is_date(d) ? d : "";
}

// The container image silicon_data_source records ("image=nvcr.io#nvidia/...;"), with
// the "#" some exports write for "/" read as "/"; "" when it records none.
std::string image_of(const RowReader& r) {
  if (!r.has("silicon_data_source")) return "";
  const std::string& s = r.text("silicon_data_source");
  const size_t at = s.find("image=");
  if (at == std::string::npos) return "";
  const size_t end = s.find(';', at);
  std::string image = s.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
  while (!image.empty() && (image.back() == ' ' || image.back() == '\r')) image.pop_back();
  std::replace(image.begin(), image.end(), '#', '/');
  return image;
}

// A batch size. The publisher derives it as the concurrency over the ranks (and workers),
// a whole number as a rule; one that is not (a concurrency they do not divide) is rounded
// up, and the run's recorded concurrency then stands for the client's
// (BenchRow::batch_fractional), rather than the file failing on one row.
int64_t batch_of(const RowReader& r, const std::string& key, int64_t min, std::string& fractional) {
  const std::string& s = r.text(key);
  char* end = nullptr;
  const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v) && v > 0 && v != std::floor(v) &&
      v <= static_cast<double>(kMaxBenchConcurrency)) {
    if (fractional.empty()) fractional = key + " " + s;
    return static_cast<int64_t>(std::ceil(v));
  }
  return r.integer(key, 0, min, kMaxBenchConcurrency);
}

// A disaggregated run's pool, from its prefix's columns where the file has them.
BenchPool read_pool(const RowReader& r, const std::string& prefix, std::string& fractional) {
  BenchPool p;
  const auto size = [&](const char* name, int64_t fallback, int64_t min) {
    const std::string key = prefix + name;
    return r.has(key) ? r.integer(key, fallback, min, kMaxBenchLayoutSize) : fallback;
  };
  p.workers = size("num_workers", 0, 0);
  p.batch_size = r.has(prefix + "batch_size") ? batch_of(r, prefix + "batch_size", 0, fractional) : 0;
  p.tp = size("tp_size", 1, 1);
  p.pp = size("pp_size", 1, 1);
  p.attention_dp = std::max<int64_t>(1, size("attention_dp_size", 1, 0));  // empty or 0: none
  p.moe_tp = std::max<int64_t>(1, size("moe_tp_size", 1, 0));
  p.moe_ep = std::max<int64_t>(1, size("moe_ep_size", 1, 0));
  return p;
}

BenchRow read_row(const RowReader& r, const std::string& file) {
  BenchRow b;
  b.id = r.id();
  b.file = file;
  b.line = r.line();
  b.backend = r.text("backend");
  b.backend_version = r.text("backend_version");
  b.model_path = r.text("model_path");
  b.system = r.text("system");
  b.mode = r.text("mode");
  if (b.mode != "agg" && b.mode != "disagg") r.fail("mode", b.mode, "expected agg or disagg");
  b.gemm_quant = r.text("gemm_quant_mode");
  b.moe_quant = r.text("moe_quant_mode");
  b.isl = r.integer("isl", 0, 1, kMaxBenchTokens);
  b.osl = r.integer("osl", 0, 1, kMaxBenchTokens);
  const bool agg = b.mode == "agg";
  b.batch_size = batch_of(r, "batch_size", agg ? 1 : 0, b.batch_fractional);
  if (agg && b.batch_size == 0) r.fail("batch_size", "", "an agg row needs its batch size");
  b.tp = r.integer("tp_size", 1, 1, kMaxBenchLayoutSize);
  b.pp = r.integer("pp_size", 1, 1, kMaxBenchLayoutSize);
  b.attention_dp = std::max<int64_t>(1, r.integer("attention_dp_size", 1, 0, kMaxBenchLayoutSize));  // empty or 0: none
  // Dense models leave the expert sizes empty or 0 ("none").
  b.moe_tp = std::max<int64_t>(1, r.integer("moe_tp_size", 1, 0, kMaxBenchLayoutSize));
  b.moe_ep = std::max<int64_t>(1, r.integer("moe_ep_size", 1, 0, kMaxBenchLayoutSize));
  // A run without a measurement (empty or "nan", as pandas writes a missing one) is read
  // and rejected alone; a malformed one is still an error.
  for (const auto& [key, latency_s] :
       {std::pair{"silicon_ttft_ms", &b.ttft_s}, std::pair{"silicon_tpot_ms", &b.tpot_s}}) {
    std::string v = r.text(key);
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v.empty() || v == "nan") {
      if (b.unmeasured.empty()) b.unmeasured = std::string(key) + (v.empty() ? " is empty" : " is nan");
    } else {
      *latency_s = r.latency_s(key);
    }
  }
  if (!agg) {
    b.prefill = read_pool(r, "prefill_", b.batch_fractional);
    b.decode = read_pool(r, "decode_", b.batch_fractional);
  }
  b.recorded_concurrency = recorded_concurrency(r);
  b.concurrency_unnamed = b.recorded_concurrency == 0 && id_leaves_concurrency_empty(b.id);
  b.deployer = deployer_of(r);
  b.measured_date = measured_date(r);
  b.image = image_of(r);
  b.in_database_dump = r.has("silicon_data_source") && r.text("silicon_data_source").rfind("db-dump/", 0) == 0;
  read_inferencex_layout(b,
                         r.has("silicon_data_source") && inferencex_layout_multiplied(r.text("silicon_data_source")));
  return b;
}

// What makes two rows one measurement. Not the model: a dump may file a run under another
// name of the same architecture (InferenceX's DeepSeek-R1 recipes, ids "dsr1_...", as
// deepseek-ai/DeepSeek-V3 in its database dump), and two runs of different models do not
// agree to 12 digits in both. Not every digit either: two exports of one run may differ in
// the last bit of a double (TTFT 1610.3835293804875 and ...877 ms, InferenceX's 2026-03-25
// and 2026-04-06 exports of one DeepSeek-R1 run).
std::string measurement_key(const BenchRow& r) {
  std::ostringstream key;
  key.precision(12);
  key << r.system << '|' << r.backend << '|' << r.backend_version << '|' << r.mode << '|' << r.isl << '|' << r.osl
      << '|' << r.concurrency() << '|' << r.ttft_s << '|' << r.tpot_s;
  return key.str();
}

bool measured(const BenchRow& r) { return r.ttft_s > 0 || r.tpot_s > 0; }

// Marks every row whose measurement the database dump holds (bench_rows.h).
void mark_database_dump(std::vector<BenchRow>& rows) {
  std::set<std::string> in_dump;
  for (const BenchRow& r : rows)
    if (r.in_database_dump && measured(r)) in_dump.insert(measurement_key(r));
  for (BenchRow& r : rows)
    if (measured(r) && in_dump.count(measurement_key(r))) r.in_database_dump = true;
}
}  // namespace

std::vector<BenchRow> read_bench_csv(const std::filesystem::path& path) {
  return parse_bench_csv(core::read_input_file(path), path.string());
}

bool is_fp8_quant_mode(const std::string& mode) {
  return mode == "fp8" || mode == "fp8_block" || mode == "fp8_static" || mode == "fp8_ootb";
}

std::vector<BenchRow> parse_bench_csv(const std::string& text, const std::string& file) {
  std::istringstream in{std::string(core::without_utf8_bom(text))};
  std::string line;
  if (!std::getline(in, line)) throw core::InputError(file, "", "", "empty file: expected a header row");
  const std::vector<std::string> header = split_csv(line);
  std::map<std::string, size_t> columns;
  for (size_t i = 0; i < header.size(); ++i) columns[header[i]] = i;
  for (const char* c : kColumns)
    if (!columns.count(c))
      throw core::InputError(file, c, "",
                             "missing column (the header has " + std::to_string(header.size()) + " columns)");
  RowReader reader(file, columns);
  std::vector<BenchRow> rows;
  for (int64_t n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> fields = split_csv(line);
    reader.start(fields, n);
    if (fields.size() != header.size())
      throw core::InputError(file, "row " + std::to_string(n), std::to_string(fields.size()) + " fields",
                             "the header has " + std::to_string(header.size()));
    rows.push_back(read_row(reader, file));
  }
  mark_database_dump(rows);
  return rows;
}

namespace {
void put_pool(std::ostringstream& o, const char* name, const BenchPool& p) {
  o << " " << name << " " << p.workers << "x b" << p.batch_size << " tp" << p.tp << " pp" << p.pp << " dp"
    << p.attention_dp << " moe_tp" << p.moe_tp << " ep" << p.moe_ep;
}
std::string layout_label(const BenchRow& r) {
  std::ostringstream o;
  if (r.disaggregated()) {
    put_pool(o, "prefill", r.prefill);
    put_pool(o, "decode", r.decode);
  } else {
    o << "tp" << r.tp << " pp" << r.pp << " dp" << r.attention_dp << " moe_tp" << r.moe_tp << " ep" << r.moe_ep;
  }
  o << " " << (r.gemm_quant.empty() ? "bf16" : r.gemm_quant) << "/" << (r.moe_quant.empty() ? "bf16" : r.moe_quant);
  return o.str();
}
}  // namespace

std::vector<std::string> conflicting_layouts(const std::vector<BenchRow>& rows) {
  std::map<std::string, std::vector<size_t>> by_measurement;
  for (size_t i = 0; i < rows.size(); ++i)
    if (measured(rows[i])) by_measurement[measurement_key(rows[i])].push_back(i);
  std::vector<std::string> reasons(rows.size());
  for (const auto& [key, idx] : by_measurement) {
    std::set<std::string> labels;
    for (size_t i : idx) labels.insert(layout_label(rows[i]));
    if (labels.size() < 2) {  // one layout: the same run imported more than once, counted once
      // The first import that names its concurrency is kept (one that does not is rejected
      // anyway), and of those the first that records its container image (which of a
      // deployer's recipes ran: bench_predict.h), then the first.
      const auto rank = [&](size_t i) {
        return (rows[i].concurrency_unnamed ? 2 : 0) + (rows[i].image.empty() ? 1 : 0);
      };
      size_t keep = idx[0];
      for (size_t i : idx)
        if (rank(i) < rank(keep)) keep = i;
      for (size_t i : idx) {
        if (i == keep || rows[i].recorded_concurrency != rows[keep].recorded_concurrency) continue;  // mislabelled
        reasons[i] = "the same measurement as " + rows[keep].id + " (" + rows[keep].file + ":" +
                     std::to_string(rows[keep].line) +
                     "): one run imported twice (same layout, lengths, concurrency, TTFT and TPOT), counted once";
        if (rows[i].model_path != rows[keep].model_path) reasons[i] += ", there filed as " + rows[keep].model_path;
      }
      continue;
    }
    std::string list;
    for (const auto& l : labels) list += (list.empty() ? "" : "; ") + l;
    for (size_t i : idx)
      reasons[i] = "one measurement under " + std::to_string(labels.size()) +
                   " layouts: the same TTFT and TPOT are recorded as " + list + " (" + std::to_string(idx.size()) +
                   " rows)";
  }
  return reasons;
}

}  // namespace dayzero::serve
