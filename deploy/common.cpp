// What every engine's launch shares (worker.h, launch.h): placing the workers,
// quoting, the script, reading a command line against the engine's argument list.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/atomic_file.h"
#include "core/json_fields.h"
#include "deploy/worker.h"
#include "serve/engine.h"

namespace dayzero::deploy {

namespace {

std::string quote(const std::string& w) {
  const bool safe = !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (safe) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string engine_title(plan::Engine e) {
  switch (e) {
    case plan::Engine::vllm: return "vLLM";
    case plan::Engine::sglang: return "SGLang";
    case plan::Engine::trtllm: return "TensorRT-LLM";
  }
  return "?";
}

}  // namespace

Unexpressible::Unexpressible(plan::Engine e, std::string field, const std::string& why)
    : std::runtime_error(engine_title(e) + " cannot run this plan as planned: " + field + ": " + why),
      field_(std::move(field)) {}

std::string Command::line() const {
  std::string s;
  const auto word = [&](const std::string& w) { s += (s.empty() ? "" : " ") + quote(w); };
  for (const auto& e : env) {
    const auto eq = e.find('=');
    s += (s.empty() ? "" : " ") + e.substr(0, eq + 1) + quote(e.substr(eq + 1));
  }
  for (const auto& w : launcher) word(w);
  for (const auto& w : program) word(w);
  for (const auto& f : flags) {
    word(f.name);
    if (f.value) word(*f.value);
  }
  return s;
}

std::string ConfigFile::text() const {
  // Fields are dotted one level deep at most ("kv_cache_config.dtype"): a key's
  // fields stay together in the order first seen.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> nested;
  for (const auto& [key, value] : fields) {
    const auto dot = key.find('.');
    const std::string top = dot == std::string::npos ? key : key.substr(0, dot);
    if (std::find(order.begin(), order.end(), top) == order.end()) order.push_back(top);
    nested[top].emplace_back(dot == std::string::npos ? "" : key.substr(dot + 1), value);
  }
  std::ostringstream out;
  for (const auto& top : order) {
    const auto& list = nested[top];
    if (list.size() == 1 && list.front().first.empty()) {
      out << top << ": " << list.front().second << '\n';
      continue;
    }
    out << top << ":\n";
    for (const auto& [sub, value] : list) out << "  " << sub << ": " << value << '\n';
  }
  return out.str();
}

std::string Launch::script() const {
  std::ostringstream s;
  int nodes = 0;
  for (const auto& c : commands) nodes = std::max(nodes, c.node + 1);
  s << "#!/usr/bin/env bash\n"
    << "# " << engine_title(engine) << " launch written by `dayzero export` (flags checked against "
    << engine_title(engine) << " " << engine_version << "'s argument list).\n"
    << "# Run this script on each of the " << nodes << " node(s) with NODE_RANK set to the node's index.\n";
  for (const auto& n : notes) s << "# Note: " << n << '\n';
  s << "set -euo pipefail\n";
  for (const auto& f : files) s << "cat > " << quote(f.name) << " <<'DAYZERO_EOF'\n" << f.text() << "DAYZERO_EOF\n";
  s << "case \"${NODE_RANK:?set NODE_RANK to this node's index, 0 to " << nodes - 1 << "}\" in\n";
  for (int n = 0; n < nodes; ++n) {
    std::vector<const Command*> here;
    for (const auto& c : commands)
      if (c.node == n) here.push_back(&c);
    s << "  " << n << ")  # " << (here.empty() ? "" : here.front()->host) << '\n';
    for (size_t i = 0; i < here.size(); ++i) {
      s << "    # " << here[i]->comment << '\n';
      s << "    " << here[i]->line() << (here.size() > 1 ? " &" : "") << '\n';
    }
    if (here.size() > 1) s << "    wait\n";
    s << "    ;;\n";
  }
  s << "  *) echo \"NODE_RANK must be 0 to " << nodes - 1 << "\" >&2; exit 1 ;;\nesac\n";
  return s.str();
}

void Launch::write_to(const std::filesystem::path& dir) const {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const auto& f : files) core::write_file_atomically(dir / f.name, f.text(), "the " + f.name + " file");
  core::write_file_atomically(dir / "launch.sh", script(), "the launch script");
  fs::permissions(dir / "launch.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
}

void check_launch(const Launch& l, const EngineArgs& args) {
  for (const auto& c : l.commands)
    for (const auto& f : c.flags) {
      const ArgSpec* spec = c.subcommand.empty() ? args.flag(f.name) : args.subcommand_flag(c.subcommand, f.name);
      if (!spec)
        throw std::invalid_argument(f.name + " is not an argument of " + args.command() +
                                    (c.subcommand.empty() ? "" : " " + c.subcommand) + " " + args.version());
      if (spec->kind == ValueKind::none) {
        if (f.value)
          throw std::invalid_argument(f.name + " is a switch of " + args.command() + ", written with a value");
      } else {
        if (!f.value) throw std::invalid_argument(f.name + " takes a value, written without one");
        EngineArgs::check_value(f.name, *spec, *f.value);
      }
    }
  for (const auto& file : l.files)
    for (const auto& [key, value] : file.llm_args ? file.fields : decltype(file.fields){}) {
      if (!args.yaml_accepts(key))
        throw std::invalid_argument(file.name + ": " + key + " is not a field of " + args.command() + " " +
                                    args.version() + "'s extra options");
      const ArgSpec* spec = args.yaml_field(key);
      if (spec && spec->kind != ValueKind::json && spec->kind != ValueKind::text)
        EngineArgs::check_value(key, *spec, value);
    }
}

namespace detail {

std::string Context::host(int node) const {
  if (node == 0 && !options->head_addr.empty()) return options->head_addr;
  const auto& names = cluster->config().node_names;
  return static_cast<size_t>(node) < names.size() ? names[node] : "n" + std::to_string(node);
}

std::optional<std::string> visible_devices(const Worker& w) {
  if (w.local_gpus.empty()) return std::nullopt;
  std::string list;
  for (int d : w.local_gpus) list += (list.empty() ? "" : ",") + std::to_string(d);
  return "CUDA_VISIBLE_DEVICES=" + list;
}

int Worker::ranks_per_node() const {
  return local_gpus.empty() ? plan.world_size() / std::max(1, nodes) : static_cast<int>(local_gpus.size());
}

std::vector<Worker> place_workers(const Context& ctx) {
  const plan::Plan& p = *ctx.plan;
  if (!p.devices.empty())
    throw Unexpressible(ctx.engine, "devices",
                        "the engines place a worker's ranks on its node's GPUs in order; a rank-to-device map "
                        "has no flag (drop \"devices\" to use the default placement)");
  std::vector<std::pair<plan::Plan, std::string>> pools;
  if (p.disaggregated.on()) {
    for (int i = 0; i < p.disaggregated.prefill_workers; ++i) pools.emplace_back(p.prefill_worker(), "prefill");
    for (int i = 0; i < p.disaggregated.decode_workers; ++i) pools.emplace_back(p.decode_worker(), "decode");
  } else {
    pools.emplace_back(p, "serve");
  }
  const int g = ctx.gpus_per_node();
  const auto dev = ctx.cluster->device_spec();
  std::vector<Worker> out;
  std::map<int, int> on_node;  // workers already on a node (ports count up)
  std::map<std::string, int> in_pool;
  int next = 0;
  for (auto& [wp, role] : pools) {
    Worker w;
    w.plan = wp;
    w.role = role;
    w.index = in_pool[role]++;
    w.first_device = next;
    const int world = wp.world_size();
    const std::string field = role == "prefill" ? "disaggregated.prefill" : "layout";
    if (world >= g) {
      if (world % g != 0 || next % g != 0)
        throw Unexpressible(ctx.engine, field,
                            "a worker of " + std::to_string(world) + " GPUs on nodes of " + std::to_string(g) +
                                " would share a node with another worker across the node boundary; the engines "
                                "start a multi-node worker on whole nodes");
      w.first_node = next / g;
      w.nodes = world / g;
    } else {
      if (next % g + world > g)
        throw Unexpressible(ctx.engine, field,
                            "a worker of " + std::to_string(world) + " GPUs starting at GPU " +
                                std::to_string(next % g) + " of a node of " + std::to_string(g) +
                                " would straddle two nodes");
      w.first_node = next / g;
      for (int i = 0; i < world; ++i) w.local_gpus.push_back(next % g + i);
    }
    w.port = ctx.options->port + on_node[w.first_node]++;
    next += world;
    const plan::EngineSettings& s = *ctx.settings;
    const int64_t schedulers = int64_t{wp.attention.dp} * wp.pp;
    w.max_running = s.max_running ? *s.max_running : (wp.workload.batch + schedulers - 1) / schedulers;
    w.token_budget = s.token_budget ? *s.token_budget : wp.prefill_chunk_tokens;
    w.max_model_len = wp.workload.input_len + wp.workload.output_len;
    w.memory_fraction =
        s.memory_fraction
            ? *s.memory_fraction
            : serve::default_profile(ctx.engine, serve::deployment_of(wp, *ctx.model, dev)).memory.memory_fraction;
    w.moe = ctx.model->config.is_moe();
    out.push_back(std::move(w));
  }
  return out;
}

std::string weight_conversion(const Context& ctx, bool online_fp8) {
  using model::WeightPrecision;
  const plan::PlanDtypes& d = ctx.plan->dtypes;
  if (d.kv_cache == plan::KvDtype::fp32)
    throw Unexpressible(ctx.engine, "dtypes.kv_cache",
                        "fp32 is the executor's full-precision reference; the engines keep their KV cache in the "
                        "model's 16-bit dtype or in FP8 (bf16 or fp8)");
  if (d.activations == plan::ActivationDtype::fp32)
    throw Unexpressible(ctx.engine, "dtypes.activations",
                        "fp32 is the executor's CPU compute; the engines compute in bf16 or fp16");
  const std::pair<const char*, WeightPrecision> parts[] = {{"dtypes.attention", d.attention},
                                                           {"dtypes.dense_mlp", d.dense_mlp},
                                                           {"dtypes.experts", d.experts},
                                                           {"dtypes.embedding", d.embedding}};
  bool all_checkpoint = true, all_fp8 = true;
  const char* first_other = nullptr;
  WeightPrecision other = WeightPrecision::checkpoint;
  for (const auto& [field, prec] : parts) {
    all_checkpoint = all_checkpoint && prec == WeightPrecision::checkpoint;
    all_fp8 = all_fp8 && prec == WeightPrecision::fp8;
    if (prec != WeightPrecision::checkpoint && prec != WeightPrecision::fp8 && !first_other)
      first_other = field, other = prec;
  }
  if (all_checkpoint || ctx.options->prequantized) return "";
  if (all_fp8 && online_fp8) return "fp8";
  const std::string field = first_other ? first_other : "dtypes";
  const std::string prec = first_other ? std::string(model::precision_name(other))
                           : all_fp8   ? std::string("fp8")
                                       : std::string("per-part");
  throw Unexpressible(ctx.engine, field,
                      (online_fp8 ? "the engine converts a checkpoint online only to FP8, every matrix alike; "
                                  : "the engine does not convert weights online; ") +
                          prec +
                          " weights need a checkpoint stored at that precision (e.g. by TensorRT Model "
                          "Optimizer or llm-compressor): export with --model-id NAME_OF_IT --prequantized");
}

void add(std::vector<Flag>& flags, const std::string& name, const std::string& value) {
  flags.push_back({name, value});
}
void add(std::vector<Flag>& flags, const std::string& name, int64_t value) {
  flags.push_back({name, std::to_string(value)});
}
void add_switch(std::vector<Flag>& flags, const std::string& name) { flags.push_back({name, std::nullopt}); }

std::string number(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace detail

}  // namespace dayzero::deploy
