#pragma once
// A plan as an engine's launch (dayzero export): the commands to run on each node,
// the files they read, and what the user must still supply. And the reverse
// (dayzero import): the Plan an engine's command line is.
//
// One engine per launch: vLLM (`vllm serve`), SGLang (`python -m
// sglang.launch_server`) or TensorRT-LLM (`trtllm-serve` with its extra-options
// YAML). Every flag and YAML field written is checked against the engine's captured
// argument list (engine_args.h). A plan the engine cannot run as planned (a layout it
// has no flags for, a precision it cannot convert to) is an Unexpressible error
// naming the plan's field and why: never a silently different deployment.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "deploy/engine_args.h"
#include "model/model.h"
#include "plan/engine_settings.h"
#include "plan/plan.h"
#include "topology/cluster.h"

namespace dayzero::deploy {

// The plan asks for what the engine has no way to run.
class Unexpressible : public std::runtime_error {
 public:
  Unexpressible(plan::Engine e, std::string field, const std::string& why);
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct Flag {
  std::string name;                  // as the engine spells it: "--tensor-parallel-size"
  std::optional<std::string> value;  // none for a switch
};

// One process to start on one node.
struct Command {
  int node = 0;
  std::string host;                   // the node's address as the commands name it
  std::string role;                   // "serve", "prefill", "decode"
  std::string comment;                // one line saying what it is
  std::vector<std::string> env;       // NAME=value
  std::vector<std::string> launcher;  // what starts the engine (mpirun ...): not the engine's flags
  std::vector<std::string> program;   // the engine's command and positional arguments
  std::vector<Flag> flags;            // the engine's flags
  std::string subcommand;             // "" = the engine's main command; else the one the flags belong to
  // The shell line: env, launcher, program and flags, each word quoted where needed.
  std::string line() const;
};

// A file a command reads (TensorRT-LLM's extra-options YAML), as dotted fields.
struct ConfigFile {
  std::string name;      // "extra-llm-api-config.yaml"
  bool llm_args = true;  // its fields are the engine's LLM arguments (checked); else a router's config
  std::vector<std::pair<std::string, std::string>> fields;  // "kv_cache_config.dtype" -> "fp8" (YAML scalars)
  std::string text() const;                                 // nested YAML
};

struct Launch {
  plan::Engine engine = plan::Engine::vllm;
  std::string engine_version;  // the argument list the flags were checked against
  std::vector<Command> commands;
  std::vector<ConfigFile> files;
  std::vector<std::string> notes;  // what the user must supply or know
  // One shell script: a section per node, the files as here-documents.
  std::string script() const;
  // The files and launch.sh (executable) into `dir`, each written atomically.
  void write_to(const std::filesystem::path& dir) const;
};

struct ExportOptions {
  std::string model_id;        // what the engine loads; default: the Hugging Face id of the plan's model
  std::string draft_model_id;  // the draft of an EAGLE plan
  std::string head_addr;       // the first node's address; default: the cluster's first node name
  int port = 8000;             // the serving port (pools and replicas on one node count up from it)
  // The model id names a checkpoint already stored at the plan's precisions (the
  // engine reads them from its quantization config): no conversion flag needed.
  bool prequantized = false;
};

// The launch of `p` (for `m` on `c`) with the user's engine settings `s` (a
// scenario's "engine" object; unset fields take the engine's defaults for the plan).
// Throws Unexpressible, and std::invalid_argument when a flag it would write is not
// in the engine's argument list (a bug or a stale list: it names the flag).
Launch export_launch(plan::Engine e, const plan::Plan& p, const model::Model& m, const topology::Cluster& c,
                     const plan::EngineSettings& s, const ExportOptions& o, const EngineArgs& args);

// Every flag and YAML field of `l` in `args`, with a value of its kind: throws
// std::invalid_argument naming the first that is not.
void check_launch(const Launch& l, const EngineArgs& args);

// What import reads back.
struct Imported {
  plan::Plan plan;                 // the layout, precisions, batch and pools; workload lengths from the caller
  plan::EngineSettings settings;   // the settings the command sets
  std::string model_id;            // the engine's model argument
  std::vector<std::string> other;  // flags the engine has that DayZero does not model (kept as the engine's)
};

// The Plan of an engine's command line (`argv` from the engine's program on, e.g.
// "vllm serve MODEL --tensor-parallel-size 8 ..."; launchers such as mpirun before
// it are skipped), with TensorRT-LLM's extra-options YAML read from the file its
// flag names (or `yaml_text` when given). `base` gives what a command does not say
// (model, cluster, workload lengths). Errors (std::invalid_argument) name the flag:
// one the engine does not have, a value of the wrong kind, a layout larger than the
// cluster.
Imported import_launch(plan::Engine e, const std::vector<std::string>& argv, const plan::Plan& base,
                       const model::Model& m, const topology::Cluster& c, const EngineArgs& args,
                       const std::optional<std::string>& yaml_text = std::nullopt);

// The model an engine's command line loads (its positional argument or model flag);
// "" when it names none. Errors as import_launch's.
std::string model_id_of(plan::Engine e, const std::vector<std::string>& argv, const EngineArgs& args);

// The Hugging Face id of a bundled model folder (data_dir/models/hf_ids.json), or "";
// and the reverse: the bundled folder (data_dir/models/NAME) of an id, or "".
std::string hf_id_of(const std::filesystem::path& data_dir, const std::string& model_path);
std::string bundled_model_of(const std::filesystem::path& data_dir, const std::string& hf_id);

}  // namespace dayzero::deploy
