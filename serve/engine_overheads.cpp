#include "serve/engine_overheads.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::serve {

namespace {

constexpr double kMaxOverheadS = 1.0;  // a host cost beyond a second is a units mistake

double seconds(core::Fields& f, const std::string& key) {
  const double v = f.opt_double(key, 0);
  if (!(v >= 0 && v <= kMaxOverheadS)) f.fail(key, "must be in [0, 1] seconds");
  return v;
}

ErrorBand band(core::Fields& f, const std::string& key) {
  ErrorBand b;
  const nlohmann::json* j = f.opt_object(key);
  if (!j) return b;
  core::Fields g(*j, f.file(), f.field(key) + ".");
  b.p10 = g.opt_double("p10", 0);
  b.p90 = g.opt_double("p90", 0);
  if (!(b.p10 > -1 && b.p10 <= b.p90)) g.fail("p10", "the band must have -1 < p10 <= p90");
  g.reject_unknown();
  return b;
}

}  // namespace

EngineOverheadTable EngineOverheadTable::load(const std::filesystem::path& path) {
  return from_json(core::read_json_file(path), path.string());
}

EngineOverheadTable EngineOverheadTable::from_json(const nlohmann::json& j, const std::string& file) {
  core::Fields top(j, file);
  (void)top.opt_string("description", "");
  const nlohmann::json* engines = top.opt_object("engines");
  if (!engines) top.fail("engines", "required field is missing");
  EngineOverheadTable t;
  for (const auto& [name, entry] : engines->items()) {
    const auto e = parse_engine(name);
    if (!e) throw core::InputError(file, "engines." + name, name, "not an engine (vllm, sglang, trtllm)");
    if (!entry.is_object()) throw core::InputError(file, "engines." + name, "", "expected an object");
    core::Fields f(entry, file, "engines." + name + ".");
    EngineOverheads o;
    o.step_overhead_s = seconds(f, "step_overhead_s");
    o.request_overhead_s = seconds(f, "request_overhead_s");
    o.request_overhead_per_inflight_s = seconds(f, "request_overhead_per_request_in_flight_s");
    o.admission_delay_steps = f.opt_double("admission_delay_steps", 0);
    if (!(o.admission_delay_steps >= 0 && o.admission_delay_steps <= kMaxAdmissionDelaySteps))
      f.fail("admission_delay_steps", "must be in [0, 100] steps");
    o.handoff_s = seconds(f, "handoff_s");
    o.rows = f.opt_int("rows", 0, 0);
    o.longest_prompt_tokens = f.opt_int("longest_prompt_tokens", 0, 0);
    o.ttft_band = band(f, "ttft_error_band");
    o.tpot_band = band(f, "tpot_error_band");
    o.source = f.opt_string("source", "");
    if (o.source.empty()) f.fail("source", "every entry must say where its figures come from");
    f.reject_unknown();
    t.engines_[*e] = o;
  }
  top.reject_unknown();
  return t;
}

EngineOverheadTable EngineOverheadTable::load_builtin(const std::filesystem::path& data_dir) {
  return load(data_dir / "devices" / "engine-overheads.json");
}

EngineOverheads EngineOverheadTable::for_engine(Engine e) const {
  const auto it = engines_.find(e);
  return it == engines_.end() ? EngineOverheads{} : it->second;
}

EngineProfile EngineOverheadTable::apply(EngineProfile p) const {
  const EngineOverheads o = for_engine(p.engine);
  p.step_overhead_s = o.step_overhead_s;
  p.request_overhead_s = o.request_overhead_s;
  p.request_overhead_per_inflight_s = o.request_overhead_per_inflight_s;
  p.admission_delay_steps = o.admission_delay_steps;
  p.handoff_s = o.handoff_s;
  return p;
}

nlohmann::json EngineOverheadTable::to_json(const std::string& description) const {
  nlohmann::json engines = nlohmann::json::object();
  for (const auto& [e, o] : engines_) {
    engines[std::string(engine_name(e))] = {
        {"step_overhead_s", o.step_overhead_s},
        {"request_overhead_s", o.request_overhead_s},
        {"request_overhead_per_request_in_flight_s", o.request_overhead_per_inflight_s},
        {"admission_delay_steps", o.admission_delay_steps},
        {"handoff_s", o.handoff_s},
        {"rows", o.rows},
        {"longest_prompt_tokens", o.longest_prompt_tokens},
        {"ttft_error_band", {{"p10", o.ttft_band.p10}, {"p90", o.ttft_band.p90}}},
        {"tpot_error_band", {{"p10", o.tpot_band.p10}, {"p90", o.tpot_band.p90}}},
        {"source", o.source}};
  }
  return {{"description", description}, {"engines", engines}};
}

void EngineOverheadTable::save(const std::filesystem::path& file, const std::string& description) const {
  core::write_file_atomically(file, to_json(description).dump(2) + "\n", "engine overheads");
}

}  // namespace dayzero::serve
