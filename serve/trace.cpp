#include "serve/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_fields.h"
#include "plan/plan.h"

namespace dayzero::serve {

namespace {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Where a value came from, for messages: "line 12, field".
struct At {
  const std::string& file;
  int64_t line;
  [[noreturn]] void fail(const std::string& field, const std::string& value, const std::string& problem) const {
    throw core::InputError(file, "line " + std::to_string(line) + ", " + field, value, problem);
  }
};

double number(const At& at, const std::string& field, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) at.fail(field, text, "not a number");
  return v;
}

int64_t length(const At& at, const std::string& field, double v, const std::string& text) {
  if (!(v >= 1 && v <= static_cast<double>(plan::kMaxSequenceTokens)) || std::floor(v) != v)
    at.fail(field, text, "must be a whole number of tokens in [1, 2^30]");
  return static_cast<int64_t>(v);
}

// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "2023-11-16 18:15:46.6805900" -> seconds since 1970 (no time zone: differences only).
double azure_time_s(const At& at, const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, n = 0;
  double s = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%lf%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 ||
      n != static_cast<int>(text.size()) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s < 0 ||
      s >= 61)
    at.fail("TIMESTAMP", text, "expected YYYY-MM-DD HH:MM:SS[.fraction]");
  return static_cast<double>(days_from_civil(y, mo, d)) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

std::vector<Request> parse_csv(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  const bool azure = col.count("TIMESTAMP") > 0;
  const std::vector<std::string> need = azure
                                            ? std::vector<std::string>{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
                                            : std::vector<std::string>{"arrival_s", "input_len", "output_len"};
  for (const auto& name : need)
    if (!col.count(name))
      throw core::InputError(file, "line 1, " + name, "",
                             "missing column: a trace's header names arrival_s,input_len,output_len[,cached_prefix] "
                             "or TIMESTAMP,ContextTokens,GeneratedTokens (Azure)");
  const bool has_prefix = col.count("cached_prefix") > 0;
  std::vector<Request> out;
  for (int64_t n = 2; std::getline(in, line); ++n) {
    if (trim(line).empty()) continue;
    const At at{file, n};
    const std::vector<std::string> cells = split(line);
    if (cells.size() != header.size())
      at.fail("row", std::to_string(cells.size()) + " fields", "the header has " + std::to_string(header.size()));
    const auto cell = [&](const std::string& name) { return cells[col.at(name)]; };
    Request r;
    r.arrival_s = azure ? azure_time_s(at, cell(need[0])) : number(at, need[0], cell(need[0]));
    if (!azure && r.arrival_s < 0) at.fail(need[0], cell(need[0]), "must not be negative");
    r.shape.input_len = length(at, need[1], number(at, need[1], cell(need[1])), cell(need[1]));
    r.shape.output_len = length(at, need[2], number(at, need[2], cell(need[2])), cell(need[2]));
    if (has_prefix) {
      const double p = number(at, "cached_prefix", cell("cached_prefix"));
      if (!(p >= 0 && p < static_cast<double>(r.shape.input_len)) || std::floor(p) != p)
        at.fail("cached_prefix", cell("cached_prefix"), "must be a whole number of tokens below input_len");
      r.shape.cached_prefix = static_cast<int64_t>(p);
    }
    if (!out.empty() && r.arrival_s < out.back().arrival_s)
      at.fail(need[0], cell(need[0]), "arrives before the request on the line above: a trace is in arrival order");
    out.push_back(r);
  }
  return out;
}

std::vector<Request> parse_jsonl(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::vector<Request> out;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (trim(line).empty()) continue;
    const std::string where = file + ", line " + std::to_string(n);
    const nlohmann::json j = core::parse_json_text(line, where);
    if (!j.is_object()) throw core::InputError(where, "", "", "expected one JSON object per line");
    core::Fields f(j, where);
    Request r;
    if (!f.has("timestamp")) f.fail("timestamp", "required field is missing");
    r.arrival_s = f.opt_non_negative("timestamp", 0) / 1000;  // milliseconds
    r.shape.input_len = f.req_int("input_length", 1, plan::kMaxSequenceTokens);
    r.shape.output_len = f.req_int("output_length", 1, plan::kMaxSequenceTokens);
    f.skip("hash_ids");
    f.reject_unknown();
    if (!out.empty() && r.arrival_s < out.back().arrival_s)
      f.fail("timestamp", "arrives before the request on the line above: a trace is in arrival order");
    out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<Request> parse_trace(const std::string& whole, const std::string& file) {
  const std::string text(core::without_utf8_bom(whole));
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<Request> out =
      first != std::string::npos && text[first] == '{' ? parse_jsonl(text, file) : parse_csv(text, file);
  if (out.empty()) throw core::InputError(file, "", "", "the trace has no requests");
  const double t0 = out.front().arrival_s;
  for (auto& r : out) r.arrival_s -= t0;
  return out;
}

std::vector<Request> read_trace(const std::filesystem::path& file) {
  return parse_trace(core::read_input_file(file), file.string());
}

}  // namespace dayzero::serve
