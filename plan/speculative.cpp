#include "plan/speculative.h"

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::plan {

std::string_view spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::none: return "none";
    case SpecMethod::mtp: return "mtp";
    case SpecMethod::eagle: return "eagle";
  }
  return "?";
}

std::optional<SpecMethod> parse_spec_method(std::string_view s) {
  return core::parse_enum(s, kAllSpecMethods, spec_method_name);
}

double SpeculativeDecoding::acceptance_at(int i) const {
  if (acceptance.empty()) return method == SpecMethod::mtp ? kDefaultMtpAcceptance : 0;
  return acceptance[std::min(static_cast<size_t>(i), acceptance.size() - 1)];
}

double SpeculativeDecoding::expected_tokens_per_step() const {
  double tokens = 1, all_accepted = 1;
  for (int i = 0; i < (on() ? draft_tokens : 0); ++i) {
    all_accepted *= acceptance_at(i);
    tokens += all_accepted;
  }
  return tokens;
}

SpeculativeDecoding speculative_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  if (!j.is_object()) throw core::InputError(file, path, j.dump(), "expected an object");
  core::Fields f(j, file, path + ".");
  SpeculativeDecoding s;
  const std::string method = f.opt_string("method", "none");
  const auto m = parse_spec_method(method);
  if (!m)
    f.fail_value("method", "\"" + method + "\"",
                 "unknown speculative method (one of: " + core::enum_names(kAllSpecMethods, spec_method_name) + ")");
  s.method = *m;
  const bool on = s.method != SpecMethod::none;
  s.draft_tokens = static_cast<int>(f.opt_int("draft_tokens", on ? 1 : 0, on ? 1 : 0, kMaxDraftTokens));
  if (!on && s.draft_tokens > 0) f.fail("draft_tokens", "given without a speculative method");
  s.acceptance = f.opt_doubles("acceptance", 0.0);
  for (double a : s.acceptance)
    if (a > 1) f.fail_value("acceptance", std::to_string(a), "an acceptance rate is at most 1");
  if (s.acceptance.size() > static_cast<size_t>(std::max(1, s.draft_tokens)))
    f.fail_value("acceptance", std::to_string(s.acceptance.size()) + " rates",
                 "more rates than draft_tokens (" + std::to_string(s.draft_tokens) + ")");
  if (s.method == SpecMethod::eagle && s.acceptance.empty())
    f.fail("method", "eagle needs measured acceptance rates (\"acceptance\"): no published rate holds across models");
  if (s.method == SpecMethod::none && !s.acceptance.empty())
    f.fail_value("acceptance", std::to_string(s.acceptance.size()) + " rates", "given without a speculative method");
  f.reject_unknown();
  return s;
}

nlohmann::json speculative_to_json(const SpeculativeDecoding& s) {
  nlohmann::json j = {{"method", spec_method_name(s.method)}, {"draft_tokens", s.draft_tokens}};
  if (!s.acceptance.empty()) j["acceptance"] = s.acceptance;
  return j;
}

}  // namespace dayzero::plan
