// An engine's captured argument list (engine_args.h).
#include "deploy/engine_args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "core/json_fields.h"

namespace dayzero::deploy {

namespace {

struct KindName {
  ValueKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {{ValueKind::none, "none"},   {ValueKind::integer, "int"}, {ValueKind::real, "float"},
                               {ValueKind::text, "string"}, {ValueKind::json, "json"},   {ValueKind::choice, "choice"},
                               {ValueKind::boolean, "bool"}};

std::map<std::string, ArgSpec, std::less<>> read_specs(core::Fields& f, const std::string& key) {
  std::map<std::string, ArgSpec, std::less<>> out;
  const nlohmann::json* obj = f.opt_object(key);
  if (!obj) return out;
  for (const auto& [name, spec] : obj->items()) {
    if (!spec.is_object()) f.fail_value(key + "." + name, core::show(spec), "is not an object");
    core::Fields s(spec, f.file(), f.field(key) + "." + name + ".");
    ArgSpec a;
    const std::string kind = s.req_string("value");
    // A nested config (TensorRT-LLM's YAML: object, dict, list) is JSON-like text here.
    const bool structured = kind == "object" || kind == "dict" || kind == "list";
    const auto it =
        std::find_if(std::begin(kKinds), std::end(kKinds), [&](const KindName& k) { return k.name == kind; });
    if (it == std::end(kKinds) && !structured)
      s.fail("value", "is not one of none, int, float, string, json, choice, bool, object, dict, list");
    a.kind = structured ? ValueKind::json : it->kind;
    a.choices = s.opt_strings("choices");
    a.dest = s.opt_string("dest", "");
    // What the capture notes beside the kind (list arity, deprecation, where a
    // choice list comes from at run time): for a reader, not for checking.
    for (const char* note : {"nargs", "note", "deprecated", "multiple", "choices_from", "type", "default"})
      s.skip(note);
    // A choice whose list the engine computes at run time checks as a string.
    if (a.kind == ValueKind::choice && a.choices.empty()) a.kind = ValueKind::text;
    s.reject_unknown();
    out.emplace(name, std::move(a));
  }
  return out;
}

}  // namespace

std::string_view value_kind_name(ValueKind k) {
  for (const auto& n : kKinds)
    if (n.kind == k) return n.name;
  return "?";
}

std::string_view pinned_file(plan::Engine e) {
  // vLLM 0.18.0 and SGLang 0.5.8: the images of the project's measured runs
  // (scenarios/fidelity). TensorRT-LLM: 1.3.0rc3, the nearest to NVIDIA Dynamo
  // 1.1.0's 1.3.0rc11 whose source could be read here (no wheel is on public PyPI).
  // How each was captured is in the file's "how" (scripts/capture-engine-args.py).
  switch (e) {
    case plan::Engine::vllm: return "vllm-0.18.0.json";
    case plan::Engine::sglang: return "sglang-0.5.8.json";
    case plan::Engine::trtllm: return "trtllm-1.3.0rc3.json";
  }
  return "";
}

EngineArgs EngineArgs::pinned(plan::Engine e, const std::filesystem::path& data_dir) {
  return load(data_dir / "engines" / std::string(pinned_file(e)));
}

EngineArgs EngineArgs::load(const std::filesystem::path& file) {
  const nlohmann::json j = core::read_json_file(file);
  if (!j.is_object()) throw core::InputError(file.string(), "", core::show(j), "is not a JSON object");
  core::Fields f(j, file.string());
  EngineArgs a;
  const std::string engine = f.req_string("engine");
  const auto e = plan::parse_engine(engine);
  if (!e) f.fail("engine", "is not one of vllm, sglang, trtllm");
  a.engine_ = *e;
  a.version_ = f.req_string("version");
  a.command_ = f.req_string("command");
  a.how_ = f.req_string("how");
  f.skip("captured");
  f.skip("positionals");
  if (const nlohmann::json* cmds = f.opt_object("commands"))
    for (const auto& [sub, list] : cmds->items()) {
      if (!list.is_object()) f.fail_value("commands." + sub, core::show(list), "is not an object");
      core::Fields lf(list, file.string(), "commands." + sub + ".");
      lf.skip("positionals");
      a.subcommands_[sub] = read_specs(lf, "flags");
      lf.reject_unknown();
    }
  f.skip("notes");
  a.flags_ = read_specs(f, "flags");
  a.yaml_ = read_specs(f, "yaml");
  if (a.flags_.empty()) f.fail("flags", "lists no flag");
  f.reject_unknown();
  return a;
}

const ArgSpec* EngineArgs::flag(std::string_view name) const {
  const auto it = flags_.find(name);
  return it == flags_.end() ? nullptr : &it->second;
}

std::string EngineArgs::dest_of(std::string_view flag) const {
  const ArgSpec* s = this->flag(flag);
  return s && !s->dest.empty() ? s->dest : std::string(flag);
}

bool EngineArgs::yaml_expands(std::string_view parent) const {
  const std::string prefix = std::string(parent) + ".";
  const auto it = yaml_.lower_bound(prefix);
  return it != yaml_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

bool EngineArgs::yaml_accepts(std::string_view dotted) const {
  if (yaml_field(dotted)) return true;
  for (auto dot = dotted.rfind('.'); dot != std::string_view::npos; dot = dotted.rfind('.', dot - 1)) {
    const std::string_view parent = dotted.substr(0, dot);
    if (yaml_field(parent)) return !yaml_expands(parent);
    if (dot == 0) break;
  }
  return false;
}

const ArgSpec* EngineArgs::subcommand_flag(std::string_view subcommand, std::string_view name) const {
  const auto sub = subcommands_.find(subcommand);
  if (sub == subcommands_.end()) return nullptr;
  const auto it = sub->second.find(name);
  return it == sub->second.end() ? nullptr : &it->second;
}

const ArgSpec* EngineArgs::yaml_field(std::string_view dotted) const {
  const auto it = yaml_.find(dotted);
  return it == yaml_.end() ? nullptr : &it->second;
}

void EngineArgs::check_value(const std::string& name, const ArgSpec& spec, const std::string& value) {
  const auto bad = [&](const std::string& what) {
    throw std::invalid_argument(name + ": \"" + value + "\" is not " + what);
  };
  switch (spec.kind) {
    case ValueKind::none: throw std::invalid_argument(name + " takes no value, was given \"" + value + "\"");
    case ValueKind::integer: {
      if (value.empty()) bad("an integer");
      char* end = nullptr;
      errno = 0;
      (void)std::strtoll(value.c_str(), &end, 10);
      if (errno != 0 || *end != '\0') bad("an integer");
      return;
    }
    case ValueKind::real: {
      if (value.empty()) bad("a number");
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v)) bad("a number");
      return;
    }
    case ValueKind::json: {
      try {
        (void)core::parse_json_text(value, name);
      } catch (const core::InputError&) {
        bad("JSON");
      }
      return;
    }
    case ValueKind::choice: {
      if (std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
        bad("one of " + list);
      }
      return;
    }
    case ValueKind::boolean: {
      std::string v = value;
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
      if (v != "true" && v != "false" && v != "1" && v != "0") bad("true or false");
      return;
    }
    case ValueKind::text: return;
  }
}

}  // namespace dayzero::deploy
