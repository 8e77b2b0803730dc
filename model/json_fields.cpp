#include "model/json_fields.h"

#include <cmath>
#include <limits>

namespace dayzero::model::detail {

std::string show(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

namespace {
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

Fields::Fields(const nlohmann::json& obj, std::string file, std::string path)
    : obj_(obj), file_(std::move(file)), path_(std::move(path)) {}

void Fields::fail(const std::string& key, const std::string& problem) const {
  const auto it = obj_.find(key);
  throw ConfigError(file_, path_ + key, it == obj_.end() ? "" : show(*it), problem);
}

void Fields::fail_value(const std::string& key, const std::string& value,
                        const std::string& problem) const {
  throw ConfigError(file_, path_ + key, value, problem);
}

bool Fields::has(const std::string& key) const {
  const auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json* Fields::get(const std::string& key) {
  read_.insert(key);
  const auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t Fields::to_int(const std::string& key, const nlohmann::json& v, int64_t min) const {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(key, "integer does not fit in 64 bits");
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())) &&
             std::abs(v.get<double>()) < 9.0e15) {
    x = static_cast<int64_t>(v.get<double>());  // e.g. 4096.0: integral, accepted
  } else {
    fail(key, std::string("expected an integer, got ") + type_word(v));
  }
  if (x < min) {
    fail(key, min == 1 ? "must be positive" : "must be at least " + std::to_string(min));
  }
  return x;
}

int64_t Fields::req_int(const std::string& key, int64_t min) {
  const nlohmann::json* v = get(key);
  if (!v) fail(key, "required field is missing");
  return to_int(key, *v, min);
}

int64_t Fields::opt_int(const std::string& key, int64_t fallback, int64_t min) {
  const nlohmann::json* v = get(key);
  return v ? to_int(key, *v, min) : fallback;
}

std::optional<int64_t> Fields::maybe_int(const std::string& key, int64_t min) {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  return to_int(key, *v, min);
}

double Fields::opt_double(const std::string& key, double fallback) {
  const nlohmann::json* v = get(key);
  if (!v) return fallback;
  if (!v->is_number()) fail(key, std::string("expected a number, got ") + type_word(*v));
  return v->get<double>();
}

bool Fields::opt_bool(const std::string& key, bool fallback) {
  const nlohmann::json* v = get(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, std::string("expected true or false, got ") + type_word(*v));
  return v->get<bool>();
}

std::string Fields::opt_string(const std::string& key, const std::string& fallback) {
  const nlohmann::json* v = get(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, std::string("expected a string, got ") + type_word(*v));
  return v->get<std::string>();
}

std::vector<std::string> Fields::opt_strings(const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json* v = get(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, std::string("expected a list of strings, got ") + type_word(*v));
  for (const auto& e : *v) {
    if (!e.is_string()) fail(key, std::string("expected a list of strings, found ") + type_word(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<int64_t> Fields::opt_ints(const std::string& key, int64_t min) {
  std::vector<int64_t> out;
  const nlohmann::json* v = get(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, std::string("expected a list of integers, got ") + type_word(*v));
  for (const auto& e : *v) out.push_back(to_int(key, e, min));
  return out;
}

std::vector<double> Fields::opt_doubles(const std::string& key, double min) {
  std::vector<double> out;
  const nlohmann::json* v = get(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, std::string("expected a list of numbers, got ") + type_word(*v));
  for (const auto& e : *v) {
    if (!e.is_number()) fail(key, std::string("expected a list of numbers, found ") + type_word(e));
    if (e.get<double>() < min) fail(key, "entries must be at least " + std::to_string(min));
    out.push_back(e.get<double>());
  }
  return out;
}

const nlohmann::json* Fields::opt_object(const std::string& key) {
  const nlohmann::json* v = get(key);
  if (v && !v->is_object()) fail(key, std::string("expected an object, got ") + type_word(*v));
  return v;
}

std::vector<std::string> Fields::unread() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : obj_.items())
    if (!read_.count(k)) out.push_back(k);
  return out;
}

}  // namespace dayzero::model::detail
