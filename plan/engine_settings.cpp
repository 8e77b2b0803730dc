#include "plan/engine_settings.h"

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::plan {

namespace {

std::optional<bool> maybe_bool(core::Fields& f, const std::string& key) {
  const nlohmann::json* v = f.opt(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) f.fail(key, "expected true or false");
  return v->get<bool>();
}

}  // namespace

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::vllm: return "vllm";
    case Engine::sglang: return "sglang";
    case Engine::trtllm: return "trtllm";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view s) { return core::parse_enum(s, kAllEngines, engine_name); }

std::string_view prefill_policy_name(PrefillPolicy p) {
  switch (p) {
    case PrefillPolicy::mixed: return "mixed";
    case PrefillPolicy::prefill_first: return "prefill_first";
  }
  return "?";
}

std::optional<PrefillPolicy> parse_prefill_policy(std::string_view s) {
  return core::parse_enum(s, kAllPrefillPolicies, prefill_policy_name);
}

void EngineSettings::merge(const EngineSettings& over) {
  const auto take = [](auto& mine, const auto& theirs) {
    if (theirs) mine = theirs;
  };
  take(engine, over.engine);
  take(token_budget, over.token_budget);
  take(max_running, over.max_running);
  take(recv_interval_steps, over.recv_interval_steps);
  take(kv_block_tokens, over.kv_block_tokens);
  take(cuda_graph_max_batch, over.cuda_graph_max_batch);
  take(memory_fraction, over.memory_fraction);
  take(policy, over.policy);
  take(chunked_prefill, over.chunked_prefill);
  take(prefix_caching, over.prefix_caching);
  take(overlap_scheduling, over.overlap_scheduling);
  take(two_batch_overlap, over.two_batch_overlap);
  take(separate_activation_quant, over.separate_activation_quant);
  take(adp_balance, over.adp_balance);
  take(adp_timeout_iters, over.adp_timeout_iters);
  take(adp_batching_wait_iters, over.adp_batching_wait_iters);
  take(batch_wait_timeout_iters, over.batch_wait_timeout_iters);
  take(batch_wait_max_tokens_ratio, over.batch_wait_max_tokens_ratio);
}

bool EngineSettings::empty() const {
  return !engine && !token_budget && !max_running && !recv_interval_steps && !kv_block_tokens &&
         !cuda_graph_max_batch && !memory_fraction && !policy && !chunked_prefill && !prefix_caching &&
         !overlap_scheduling && !two_batch_overlap && !separate_activation_quant && !adp_balance &&
         !adp_timeout_iters && !adp_batching_wait_iters && !batch_wait_timeout_iters && !batch_wait_max_tokens_ratio;
}

EngineSettings engine_settings_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  if (!j.is_object())
    throw core::InputError(file, path.empty() ? "" : path.substr(0, path.size() - 1), "",
                           "expected a JSON object of engine settings");
  core::Fields f(j, file, path);
  EngineSettings s;
  if (f.has("name")) {
    const std::string name = f.req_string("name");
    s.engine = parse_engine(name);
    if (!s.engine) f.fail_value("name", name, "one of vllm, sglang, trtllm");
  } else {
    f.skip("name");
  }
  s.token_budget = f.maybe_int("token_budget", 1, kMaxTokenBudget);
  s.max_running = f.maybe_int("max_running", 1, kMaxRunning);
  s.recv_interval_steps = f.maybe_int("recv_interval_steps", 1, kMaxRecvInterval);
  s.kv_block_tokens = f.maybe_int("kv_block_tokens", 1, kMaxKvBlockTokens);
  s.cuda_graph_max_batch = f.maybe_int("cuda_graph_max_batch", 0, kMaxTokenBudget);
  if (const auto fraction = f.opt_positive("memory_fraction")) {
    if (*fraction > 1) f.fail("memory_fraction", "must be in (0, 1]");
    s.memory_fraction = fraction;
  }
  if (f.has("policy")) {
    const std::string name = f.req_string("policy");
    s.policy = parse_prefill_policy(name);
    if (!s.policy) f.fail_value("policy", name, "one of mixed, prefill_first");
  } else {
    f.skip("policy");
  }
  s.chunked_prefill = maybe_bool(f, "chunked_prefill");
  s.prefix_caching = maybe_bool(f, "prefix_caching");
  s.overlap_scheduling = maybe_bool(f, "overlap_scheduling");
  s.two_batch_overlap = maybe_bool(f, "two_batch_overlap");
  s.separate_activation_quant = maybe_bool(f, "separate_activation_quant");
  s.adp_balance = maybe_bool(f, "adp_balance");
  s.adp_timeout_iters = f.maybe_int("adp_timeout_iters", 0, kMaxAdpIters);
  s.adp_batching_wait_iters = f.maybe_int("adp_batching_wait_iters", 0, kMaxAdpIters);
  s.batch_wait_timeout_iters = f.maybe_int("batch_wait_timeout_iters", 0, kMaxAdpIters);
  if (f.has("batch_wait_max_tokens_ratio")) {
    const double ratio = f.opt_non_negative("batch_wait_max_tokens_ratio", 0);
    if (ratio > 1) f.fail("batch_wait_max_tokens_ratio", "must be in [0, 1]");
    s.batch_wait_max_tokens_ratio = ratio;
  }
  f.reject_unknown();
  return s;
}

EngineSettings load_engine_settings(const std::filesystem::path& file) {
  return engine_settings_from_json(core::read_json_file(file), file.string());
}

nlohmann::json engine_settings_to_json(const EngineSettings& s) {
  nlohmann::json j = nlohmann::json::object();
  if (s.engine) j["name"] = std::string(engine_name(*s.engine));
  if (s.token_budget) j["token_budget"] = *s.token_budget;
  if (s.max_running) j["max_running"] = *s.max_running;
  if (s.recv_interval_steps) j["recv_interval_steps"] = *s.recv_interval_steps;
  if (s.kv_block_tokens) j["kv_block_tokens"] = *s.kv_block_tokens;
  if (s.cuda_graph_max_batch) j["cuda_graph_max_batch"] = *s.cuda_graph_max_batch;
  if (s.memory_fraction) j["memory_fraction"] = *s.memory_fraction;
  if (s.policy) j["policy"] = std::string(prefill_policy_name(*s.policy));
  if (s.chunked_prefill) j["chunked_prefill"] = *s.chunked_prefill;
  if (s.prefix_caching) j["prefix_caching"] = *s.prefix_caching;
  if (s.overlap_scheduling) j["overlap_scheduling"] = *s.overlap_scheduling;
  if (s.two_batch_overlap) j["two_batch_overlap"] = *s.two_batch_overlap;
  if (s.separate_activation_quant) j["separate_activation_quant"] = *s.separate_activation_quant;
  if (s.adp_balance) j["adp_balance"] = *s.adp_balance;
  if (s.adp_timeout_iters) j["adp_timeout_iters"] = *s.adp_timeout_iters;
  if (s.adp_batching_wait_iters) j["adp_batching_wait_iters"] = *s.adp_batching_wait_iters;
  if (s.batch_wait_timeout_iters) j["batch_wait_timeout_iters"] = *s.batch_wait_timeout_iters;
  if (s.batch_wait_max_tokens_ratio) j["batch_wait_max_tokens_ratio"] = *s.batch_wait_max_tokens_ratio;
  return j;
}

}  // namespace dayzero::plan
