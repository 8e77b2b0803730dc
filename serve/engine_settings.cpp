#include "serve/engine_settings.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::serve {

namespace {

constexpr PrefillPolicy kAllPolicies[] = {PrefillPolicy::mixed, PrefillPolicy::prefill_first};

std::optional<bool> maybe_bool(core::Fields& f, const std::string& key) {
  if (!f.has(key)) {
    f.skip(key);
    return std::nullopt;
  }
  const nlohmann::json& v = f.req(key);
  if (!v.is_boolean()) f.fail(key, "expected true or false");
  return v.get<bool>();
}

}  // namespace

std::optional<PrefillPolicy> parse_prefill_policy(std::string_view s) {
  return core::parse_enum(s, kAllPolicies, prefill_policy_name);
}

void EngineSettings::merge(const EngineSettings& over) {
  const auto take = [](auto& mine, const auto& theirs) {
    if (theirs) mine = theirs;
  };
  take(token_budget, over.token_budget);
  take(max_running, over.max_running);
  take(recv_interval_steps, over.recv_interval_steps);
  take(kv_block_tokens, over.kv_block_tokens);
  take(memory_fraction, over.memory_fraction);
  take(policy, over.policy);
  take(chunked_prefill, over.chunked_prefill);
  take(prefix_caching, over.prefix_caching);
  take(overlap_scheduling, over.overlap_scheduling);
}

bool EngineSettings::empty() const {
  return !token_budget && !max_running && !recv_interval_steps && !kv_block_tokens && !memory_fraction && !policy &&
         !chunked_prefill && !prefix_caching && !overlap_scheduling;
}

EngineSettings engine_settings_from_json(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) throw core::InputError(file, "", "", "expected a JSON object of engine settings");
  core::Fields f(j, file);
  EngineSettings s;
  s.token_budget = f.maybe_int("token_budget", 1, kMaxTokenBudget);
  s.max_running = f.maybe_int("max_running", 1, kMaxRunning);
  s.recv_interval_steps = f.maybe_int("recv_interval_steps", 1, kMaxRecvInterval);
  s.kv_block_tokens = f.maybe_int("kv_block_tokens", 1, kMaxKvBlockTokens);
  if (const auto fraction = f.opt_positive("memory_fraction")) {
    if (*fraction > 1) f.fail("memory_fraction", "must be in (0, 1]");
    s.memory_fraction = fraction;
  }
  if (f.has("policy")) {
    const std::string name = f.req_string("policy");
    s.policy = parse_prefill_policy(name);
    if (!s.policy) f.fail_value("policy", name, "one of mixed, prefill_first");
  }
  s.chunked_prefill = maybe_bool(f, "chunked_prefill");
  s.prefix_caching = maybe_bool(f, "prefix_caching");
  s.overlap_scheduling = maybe_bool(f, "overlap_scheduling");
  f.reject_unknown();
  return s;
}

EngineSettings load_engine_settings(const std::filesystem::path& file) {
  return engine_settings_from_json(core::read_json_file(file), file.string());
}

nlohmann::json engine_settings_to_json(const EngineSettings& s) {
  nlohmann::json j = nlohmann::json::object();
  if (s.token_budget) j["token_budget"] = *s.token_budget;
  if (s.max_running) j["max_running"] = *s.max_running;
  if (s.recv_interval_steps) j["recv_interval_steps"] = *s.recv_interval_steps;
  if (s.kv_block_tokens) j["kv_block_tokens"] = *s.kv_block_tokens;
  if (s.memory_fraction) j["memory_fraction"] = *s.memory_fraction;
  if (s.policy) j["policy"] = std::string(prefill_policy_name(*s.policy));
  if (s.chunked_prefill) j["chunked_prefill"] = *s.chunked_prefill;
  if (s.prefix_caching) j["prefix_caching"] = *s.prefix_caching;
  if (s.overlap_scheduling) j["overlap_scheduling"] = *s.overlap_scheduling;
  return j;
}

EngineProfile apply(EngineProfile p, const EngineSettings& s) {
  if (s.token_budget) p.token_budget = *s.token_budget;
  if (s.max_running) p.max_running = *s.max_running;
  if (s.recv_interval_steps) p.recv_interval_steps = *s.recv_interval_steps;
  if (s.kv_block_tokens) p.kv_block_tokens = *s.kv_block_tokens;
  if (s.memory_fraction) p.memory.memory_fraction = *s.memory_fraction;
  if (s.policy) p.policy = *s.policy;
  if (s.chunked_prefill) p.chunked_prefill = *s.chunked_prefill;
  if (s.prefix_caching) p.prefix_caching = *s.prefix_caching;
  if (s.overlap_scheduling) p.overlap_scheduling = *s.overlap_scheduling;
  if (s.token_budget) p.memory.step_tokens = p.token_budget;
  if (s.max_running) p.memory.logit_rows = std::min(p.memory.logit_rows, p.max_running);
  return p;
}

}  // namespace dayzero::serve
