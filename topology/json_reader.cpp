#include "topology/json_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace dayzero::topology::detail {

std::string show(const nlohmann::json& v) {
  std::string s = v.dump();
  constexpr std::size_t kMaxShown = 60;  // keep one-line messages one line
  if (s.size() > kMaxShown) s = s.substr(0, kMaxShown - 3) + "...";
  return s;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the failing character; turn it into line:column.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw TopologyError(source, "", "",
                        "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                            " (" + e.what() + ")");
  }
}

nlohmann::json parse_json_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw TopologyError(file.string(), "", "", "cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_json_text(buf.str(), file.string());
}

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string file, std::string path)
    : obj_(obj), file_(std::move(file)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    std::string where = path_.empty() ? "" : path_.substr(0, path_.size() - 1);  // drop trailing '.'
    throw TopologyError(file_, where, show(obj_), "expected a JSON object");
  }
}

bool ObjectReader::has(const std::string& key) const {
  auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json* ObjectReader::opt(const std::string& key) {
  read_.insert(key);
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json& ObjectReader::req(const std::string& key) {
  const nlohmann::json* v = opt(key);
  if (v == nullptr) throw TopologyError(file_, field(key), "", "required field is missing");
  return *v;
}

std::string ObjectReader::req_string(const std::string& key) {
  const auto& v = req(key);
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) fail(key, v, "expected a non-empty string");
  return v.get<std::string>();
}

std::string ObjectReader::opt_string(const std::string& key, const std::string& fallback) {
  return has(key) ? req_string(key) : (read_.insert(key), fallback);
}

double ObjectReader::number(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_number()) fail(key, v, "expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, v, "expected a finite number");
  return x;
}

int64_t ObjectReader::req_int(const std::string& key, int64_t min) {
  const auto& v = req(key);
  const double x = number(key, v);
  if (std::floor(x) != x || std::fabs(x) > 9.0e15) fail(key, v, "expected an integer");
  const auto i = static_cast<int64_t>(x);
  if (i < min) fail(key, v, "must be at least " + std::to_string(min));
  return i;
}

int64_t ObjectReader::opt_int(const std::string& key, int64_t fallback, int64_t min) {
  return has(key) ? req_int(key, min) : (read_.insert(key), fallback);
}

double ObjectReader::req_positive(const std::string& key) {
  const auto& v = req(key);
  const double x = number(key, v);
  if (!(x > 0.0)) fail(key, v, "must be positive");
  return x;
}

std::optional<double> ObjectReader::opt_positive(const std::string& key) {
  if (!has(key)) {
    read_.insert(key);
    return std::nullopt;
  }
  return req_positive(key);
}

double ObjectReader::opt_non_negative(const std::string& key, double fallback) {
  const nlohmann::json* v = opt(key);
  if (v == nullptr) return fallback;
  const double x = number(key, *v);
  if (x < 0.0) fail(key, *v, "must not be negative");
  return x;
}

void ObjectReader::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (read_.count(it.key()) == 0) throw TopologyError(file_, field(it.key()), show(it.value()), "unknown field");
  }
}

void ObjectReader::fail(const std::string& key, const nlohmann::json& value, const std::string& problem) const {
  throw TopologyError(file_, field(key), show(value), problem);
}

}  // namespace dayzero::topology::detail
