// import_launch (launch.h): an engine's command line read against its argument list,
// then the engine's own reader.
#include <algorithm>
#include <set>

#include <yaml-cpp/yaml.h>

#include "core/input_file.h"
#include "deploy/worker.h"

namespace dayzero::deploy {

namespace detail {

const std::string* ParsedArgs::get(const EngineArgs& a, const std::string& flag) const {
  const auto it = values.find(a.dest_of(flag));
  return it == values.end() ? nullptr : &it->second;
}

int64_t ParsedArgs::get_int(const EngineArgs& a, const std::string& flag, int64_t fallback) const {
  const std::string* v = get(a, flag);
  return v ? std::stoll(*v) : fallback;
}

std::optional<bool> ParsedArgs::get_bool(const EngineArgs& a, const std::string& flag) const {
  const std::string negated = "--no-" + flag.substr(2);
  // The later of the two wins, as argparse applies them in order.
  for (auto it = seen.rbegin(); it != seen.rend(); ++it) {
    if (*it == negated) return false;
    if (*it == flag) return true;
  }
  if (const std::string* v = get(a, flag)) return *v == "true";
  return std::nullopt;
}

bool ParsedArgs::get_switch(const EngineArgs& a, const std::string& flag) const {
  const auto b = get_bool(a, flag);
  return b && *b;
}

ParsedArgs parse_args(const std::vector<std::string>& argv, size_t begin, const EngineArgs& a) {
  ParsedArgs out;
  for (size_t i = begin; i < argv.size(); ++i) {
    const std::string& tok = argv[i];
    if (tok.size() < 2 || tok[0] != '-') {
      out.positional.push_back(tok);
      continue;
    }
    std::string name = tok;
    std::optional<std::string> value;
    if (const auto eq = tok.find('='); eq != std::string::npos && tok.rfind("--", 0) == 0) {
      name = tok.substr(0, eq);
      value = tok.substr(eq + 1);
    }
    const ArgSpec* spec = a.flag(name);
    if (!spec && a.engine() == plan::Engine::vllm && name.rfind("--", 0) == 0) {
      // vLLM's FlexibleArgumentParser takes underscores for dashes in flag names.
      std::string dashed = name;
      std::replace(dashed.begin() + 2, dashed.end(), '_', '-');
      if ((spec = a.flag(dashed))) name = dashed;
    }
    if (!spec) throw std::invalid_argument(name + " is not an argument of " + a.command() + " " + a.version());
    out.seen.push_back(name);
    if (spec->kind == ValueKind::none) {
      if (value) throw std::invalid_argument(name + " takes no value, was given \"" + *value + "\"");
      out.values[a.dest_of(name)] = name.rfind("--no-", 0) == 0 ? "false" : "true";
      continue;
    }
    if (!value) {
      if (i + 1 >= argv.size()) throw std::invalid_argument(name + " needs a value");
      value = argv[++i];
    }
    EngineArgs::check_value(name, *spec, *value);
    out.values[a.dest_of(name)] = *value;
  }
  return out;
}

}  // namespace detail

namespace {

// Where the engine's own arguments start: after its program words ("vllm serve",
// "python3 -m sglang.launch_server", "trtllm-serve [serve]"); launchers before them
// (mpirun, srun, trtllm-llmapi-launch, env) are skipped.
size_t program_end(plan::Engine e, const std::vector<std::string>& argv, const EngineArgs& a) {
  const auto base = [](const std::string& w) {
    const auto slash = w.rfind('/');
    return slash == std::string::npos ? w : w.substr(slash + 1);
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string w = base(argv[i]);
    if (e == plan::Engine::vllm && w == "vllm" && i + 1 < argv.size() && argv[i + 1] == "serve") return i + 2;
    if (e == plan::Engine::vllm && w == "vllm.entrypoints.openai.api_server") return i + 1;
    if (e == plan::Engine::sglang && (w == "sglang.launch_server" || w == "sglang.launch_server.py")) return i + 1;
    if (e == plan::Engine::trtllm && w == "trtllm-serve")
      return i + 1 < argv.size() && argv[i + 1] == "serve" ? i + 2 : i + 1;
  }
  throw std::invalid_argument("the command line does not run " + a.command() +
                              " (give it from the engine's program on, e.g. \"" + a.command() + " MODEL ...\")");
}

void flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>& out, int depth) {
  if (depth > 8) throw std::invalid_argument(prefix + ": the extra options nest deeper than 8 levels");
  if (n.IsMap()) {
    for (const auto& kv : n)
      flatten(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>(), out,
              depth + 1);
    return;
  }
  if (n.IsScalar()) {
    out[prefix] = n.as<std::string>();
    return;
  }
  if (n.IsNull()) {  // e.g. cuda_graph_config: null (graphs off), as JSON writes it
    out[prefix] = "null";
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << n;
  out[prefix] = e.c_str();
}

// TensorRT-LLM's extra options as dotted fields, each one the engine has.
std::map<std::string, std::string> read_extra_options(const std::string& text, const std::string& source,
                                                      const EngineArgs& a) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    throw std::invalid_argument(source + ": not YAML: " + ex.what());
  }
  std::map<std::string, std::string> out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) throw std::invalid_argument(source + ": the extra options are not a mapping of fields");
  flatten(root, "", out, 0);
  for (const auto& [key, value] : out) {
    const ArgSpec* spec = a.yaml_field(key);
    if (!a.yaml_accepts(key))
      throw std::invalid_argument(source + ": " + key + " is not a field of " + a.command() + " " + a.version() +
                                  "'s extra options");
    if (spec && spec->kind != ValueKind::text && spec->kind != ValueKind::json)
      EngineArgs::check_value(source + ": " + key, *spec, value);
  }
  return out;
}

std::string layout_words(plan::Engine e, const plan::Plan& p) {
  switch (e) {
    case plan::Engine::vllm:
      return "--tensor-parallel-size " + std::to_string(p.attention.tp) + " x --data-parallel-size " +
             std::to_string(p.attention.dp) + " x --pipeline-parallel-size " + std::to_string(p.pp);
    case plan::Engine::sglang:
      return "--tp-size " + std::to_string(p.ranks_per_stage()) + " x --pp-size " + std::to_string(p.pp);
    case plan::Engine::trtllm:
      return "--tp_size " + std::to_string(p.ranks_per_stage()) + " x --pp_size " + std::to_string(p.pp);
  }
  return "";
}

}  // namespace

std::string model_id_of(plan::Engine e, const std::vector<std::string>& argv, const EngineArgs& args) {
  const detail::ParsedArgs parsed = detail::parse_args(argv, program_end(e, argv, args), args);
  for (const char* flag : {"--model", "--model-path"})
    if (const std::string* v = parsed.get(args, flag)) return *v;
  return parsed.positional.empty() ? "" : parsed.positional.front();
}

Imported import_launch(plan::Engine e, const std::vector<std::string>& argv, const plan::Plan& base,
                       const model::Model& m, const topology::Cluster& c, const EngineArgs& args,
                       const std::optional<std::string>& yaml_text) {
  if (args.engine() != e) throw std::invalid_argument("the argument list given is not the engine's");
  const detail::ParsedArgs parsed = detail::parse_args(argv, program_end(e, argv, args), args);
  Imported out;
  out.plan = base;
  out.plan.pp = 1;
  out.plan.attention = {};
  out.plan.moe = {};
  out.plan.devices.clear();
  out.plan.stage_layers.clear();
  out.plan.disaggregated = {};
  out.plan.speculative = {};
  detail::Reading r;
  r.out = &out;
  r.moe = m.config.is_moe();
  r.experts = m.config.moe.num_experts;
  std::map<std::string, std::string> yaml;
  if (e == plan::Engine::trtllm) {
    if (yaml_text) {
      yaml = read_extra_options(*yaml_text, "the extra options", args);
    } else if (const std::string* file = parsed.get(args, "--extra_llm_api_options")) {
      yaml = read_extra_options(core::read_input_file(*file), *file, args);
    }
  }
  switch (e) {
    case plan::Engine::vllm: detail::read_vllm(parsed, args, r); break;
    case plan::Engine::sglang: detail::read_sglang(parsed, args, r); break;
    case plan::Engine::trtllm: detail::read_trtllm(parsed, args, yaml, r); break;
  }
  // The model: the first positional argument, or the flag that names it.
  for (const char* flag : {"--model", "--model-path"})
    if (const std::string* v = parsed.get(args, flag)) out.model_id = *v;
  if (out.model_id.empty() && !parsed.positional.empty()) out.model_id = parsed.positional.front();
  const std::set<std::string> understood(r.understood.begin(), r.understood.end());
  for (const auto& f : parsed.seen)
    if (!understood.count(f) && std::find(out.other.begin(), out.other.end(), f) == out.other.end())
      out.other.push_back(f);
  const plan::Plan& p = out.plan;
  if (p.world_size() > static_cast<int64_t>(c.num_devices()))
    throw std::invalid_argument(layout_words(e, p) + " = " + std::to_string(p.world_size()) + " GPUs: the cluster " +
                                c.name() + " has " + std::to_string(c.num_devices()));
  const int64_t needed = p.workload.input_len + p.workload.output_len;
  if (r.max_model_len > 0 && r.max_model_len < needed)
    throw std::invalid_argument("the command's longest sequence (" + std::to_string(r.max_model_len) +
                                " tokens) is shorter than the workload's prompt + output (" + std::to_string(needed) +
                                ")");
  return out;
}

}  // namespace dayzero::deploy
