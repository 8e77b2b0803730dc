#include "core/json_fields.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace dayzero::core {

namespace {

constexpr std::size_t kMaxShown = 60;  // keep one-line messages one line
// Largest integral double accepted as an integer (below 2^53, where doubles stop
// holding every integer).
constexpr double kMaxIntegralDouble = 9.0e15;

const char* type_word(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "null";
}

}  // namespace

std::string show(const nlohmann::json& v) {
  // A string that is not UTF-8 (one built in code, not parsed) shows U+FFFD
  // instead of making dump() throw while an error is being reported.
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxShown) {
    std::size_t cut = kMaxShown - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    s = s.substr(0, cut) + "...";
  }
  return s;
}

Fields::Fields(const nlohmann::json& obj, std::string file, std::string path)
    : obj_(obj), file_(std::move(file)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    const std::string where = path_.empty() ? "" : path_.substr(0, path_.size() - 1);  // drop the trailing '.'
    throw InputError(file_, where, show(obj_), "expected a JSON object");
  }
}

void Fields::fail(const std::string& key, const std::string& problem) const {
  const auto it = obj_.find(key);
  throw InputError(file_, field(key), it == obj_.end() ? "" : show(*it), problem);
}

void Fields::fail(const std::string& key, const nlohmann::json& value, const std::string& problem) const {
  throw InputError(file_, field(key), show(value), problem);
}

void Fields::fail_value(const std::string& key, const std::string& value, const std::string& problem) const {
  throw InputError(file_, field(key), value, problem);
}

bool Fields::has(const std::string& key) const {
  const auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json* Fields::opt(const std::string& key) {
  read_.insert(key);
  const auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json& Fields::req(const std::string& key) {
  const nlohmann::json* v = opt(key);
  if (!v) fail(key, "required field is missing");
  return *v;
}

int64_t Fields::to_int(const std::string& key, const nlohmann::json& v, int64_t min, int64_t max) const {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(key, v, "integer does not fit in 64 bits");
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::abs(v.get<double>()) < kMaxIntegralDouble) {
    x = static_cast<int64_t>(v.get<double>());  // e.g. 4096.0: integral, accepted
  } else {
    fail(key, v, std::string("expected an integer, got ") + type_word(v));
  }
  if (x < min) fail(key, v, min == 1 ? "must be positive" : "must be at least " + std::to_string(min));
  if (x > max) fail(key, v, "must be at most " + std::to_string(max));
  return x;
}

double Fields::number(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_number()) fail(key, v, std::string("expected a number, got ") + type_word(v));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, v, "expected a finite number");
  return x;
}

int64_t Fields::req_int(const std::string& key, int64_t min, int64_t max) { return to_int(key, req(key), min, max); }

int64_t Fields::opt_int(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  const nlohmann::json* v = opt(key);
  return v ? to_int(key, *v, min, max) : fallback;
}

std::optional<int64_t> Fields::maybe_int(const std::string& key, int64_t min, int64_t max) {
  const nlohmann::json* v = opt(key);
  if (!v) return std::nullopt;
  return to_int(key, *v, min, max);
}

double Fields::opt_double(const std::string& key, double fallback) {
  const nlohmann::json* v = opt(key);
  return v ? number(key, *v) : fallback;
}

double Fields::req_positive(const std::string& key) {
  const nlohmann::json& v = req(key);
  const double x = number(key, v);
  if (!(x > 0.0)) fail(key, v, "must be positive");
  return x;
}

std::optional<double> Fields::opt_positive(const std::string& key) {
  if (!has(key)) {
    read_.insert(key);
    return std::nullopt;
  }
  return req_positive(key);
}

double Fields::opt_non_negative(const std::string& key, double fallback) {
  const nlohmann::json* v = opt(key);
  if (!v) return fallback;
  const double x = number(key, *v);
  if (x < 0.0) fail(key, *v, "must not be negative");
  return x;
}

bool Fields::opt_bool(const std::string& key, bool fallback) {
  const nlohmann::json* v = opt(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, *v, std::string("expected true or false, got ") + type_word(*v));
  return v->get<bool>();
}

std::string Fields::req_string(const std::string& key) {
  const nlohmann::json& v = req(key);
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) fail(key, v, "expected a non-empty string");
  return v.get<std::string>();
}

std::string Fields::opt_string(const std::string& key, const std::string& fallback) {
  const nlohmann::json* v = opt(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, *v, std::string("expected a string, got ") + type_word(*v));
  return v->get<std::string>();
}

std::vector<std::string> Fields::opt_strings(const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json* v = opt(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, *v, std::string("expected a list of strings, got ") + type_word(*v));
  for (const auto& e : *v) {
    if (!e.is_string()) fail(key, *v, std::string("expected a list of strings, found ") + type_word(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<int64_t> Fields::opt_ints(const std::string& key, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  const nlohmann::json* v = opt(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, *v, std::string("expected a list of integers, got ") + type_word(*v));
  for (const auto& e : *v) out.push_back(to_int(key, e, min, max));
  return out;
}

std::vector<double> Fields::opt_doubles(const std::string& key, double min) {
  std::vector<double> out;
  const nlohmann::json* v = opt(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, *v, std::string("expected a list of numbers, got ") + type_word(*v));
  for (const auto& e : *v) {
    if (!e.is_number()) fail(key, *v, std::string("expected a list of numbers, found ") + type_word(e));
    if (e.get<double>() < min) fail(key, *v, "entries must be at least " + std::to_string(min));
    out.push_back(e.get<double>());
  }
  return out;
}

const nlohmann::json* Fields::opt_object(const std::string& key) {
  const nlohmann::json* v = opt(key);
  if (v && !v->is_object()) fail(key, *v, std::string("expected an object, got ") + type_word(*v));
  return v;
}

std::vector<std::string> Fields::unread() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : obj_.items())
    if (!read_.count(k)) out.push_back(k);
  return out;
}

void Fields::reject_unknown() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!read_.count(it.key())) fail(it.key(), it.value(), "unknown field");
}

}  // namespace dayzero::core
