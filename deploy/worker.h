#pragma once
// Inside deploy/: what every engine's launch is made of. A deployment's workers
// (one pool, or a disaggregated plan's prefill and decode pools), each placed on
// devices and nodes, with the engine-neutral settings the engines' flags express;
// and a user's command line read against the engine's argument list.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "deploy/launch.h"

namespace dayzero::deploy::detail {

// The deployment being exported.
struct Context {
  plan::Engine engine = plan::Engine::vllm;
  const plan::Plan* plan = nullptr;
  const model::Model* model = nullptr;
  const topology::Cluster* cluster = nullptr;
  const plan::EngineSettings* settings = nullptr;
  const ExportOptions* options = nullptr;
  std::string model_id;
  std::string host(int node) const;  // node 0's is the head address
  int gpus_per_node() const { return static_cast<int>(cluster->devices_per_node()); }
};

// One worker of the deployment: an engine instance, one or several nodes.
struct Worker {
  plan::Plan plan;       // the worker's own plan (its layout and batch)
  std::string role;      // "serve", "prefill", "decode"
  int index = 0;         // within its pool
  int first_device = 0;  // the cluster's device index of its rank 0
  int first_node = 0, nodes = 1;
  std::vector<int> local_gpus;  // its GPUs when it shares a node (CUDA_VISIBLE_DEVICES); empty: whole nodes
  int port = 8000;
  int64_t max_running = 1;   // sequences per scheduler (attention-DP replica)
  int64_t token_budget = 0;  // tokens per step
  int64_t max_model_len = 0;
  double memory_fraction = 0.9;
  bool moe = false;  // the model routes experts (the moe layout means something)
  int ranks_per_node() const;
};

// The environment entry that gives a worker sharing a node its GPUs; none for whole nodes.
std::optional<std::string> visible_devices(const Worker& w);

// The workers of the plan, placed: prefill workers first, then decode workers (or
// the one pool), each on whole nodes or inside one node. Unexpressible when a worker
// straddles nodes unevenly.
std::vector<Worker> place_workers(const Context& ctx);

// The precision flag the plan needs: "" (the checkpoint as stored, or a prequantized
// model id), "fp8" (online FP8 of a 16-bit checkpoint, where `online_fp8` says the
// engine can), else Unexpressible naming the dtypes field (an fp32 KV cache too).
std::string weight_conversion(const Context& ctx, bool online_fp8);

void add(std::vector<Flag>& flags, const std::string& name, const std::string& value);
void add(std::vector<Flag>& flags, const std::string& name, int64_t value);
void add_switch(std::vector<Flag>& flags, const std::string& name);
std::string number(double v);  // shortest round-trip text of a fraction

// An engine command line read against its argument list: flags by the setting they
// write (EngineArgs::dest_of), positional arguments in order.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // dest -> value ("true"/"false" for switches)
  std::vector<std::string> seen;              // flags as written, in order
  const std::string* get(const EngineArgs& a, const std::string& flag) const;
  int64_t get_int(const EngineArgs& a, const std::string& flag, int64_t fallback) const;
  bool get_switch(const EngineArgs& a, const std::string& flag) const;  // given (and not --no-...)
  // A switch with a --no- twin: true, false, or not given.
  std::optional<bool> get_bool(const EngineArgs& a, const std::string& flag) const;
};
// `argv` from `begin`: "--flag value", "--flag=value", switches; an unknown flag or a
// value of the wrong kind is std::invalid_argument naming it.
ParsedArgs parse_args(const std::vector<std::string>& argv, size_t begin, const EngineArgs& a);

// The engines, each both ways.
void emit_vllm(const Context& ctx, const std::vector<Worker>& workers, Launch& out);
void emit_sglang(const Context& ctx, const std::vector<Worker>& workers, Launch& out);
void emit_trtllm(const Context& ctx, const std::vector<Worker>& workers, Launch& out);
// What an engine's reader fills: `out->plan` (its layout, dtypes, batch and
// speculative settings over the base plan already there) and `out->settings`, the
// flags it understood, and the longest sequence the command allows (0: not said).
struct Reading {
  Imported* out = nullptr;
  bool moe = false;     // the model routes experts
  int64_t experts = 0;  // routed experts per layer
  std::vector<std::string> understood;
  int64_t max_model_len = 0;
};
void read_vllm(const ParsedArgs& args, const EngineArgs& a, Reading& r);
void read_sglang(const ParsedArgs& args, const EngineArgs& a, Reading& r);
void read_trtllm(const ParsedArgs& args, const EngineArgs& a, const std::map<std::string, std::string>& yaml,
                 Reading& r);

}  // namespace dayzero::deploy::detail
