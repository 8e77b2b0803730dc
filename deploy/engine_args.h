#pragma once
// An engine's own argument list at a pinned version, as captured from the engine
// (scenarios/engines/*.json; scripts/capture-engine-args.py says how): every flag
// of its launch command and the kind of value it takes, and for TensorRT-LLM the
// fields its extra-options YAML accepts. export checks every flag it writes against
// it and import reads a user's command line with it, so that a flag the engine does
// not have, or a value of the wrong kind, is an error naming the flag.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/engine_settings.h"

namespace dayzero::deploy {

// What a flag takes: nothing (a switch), a number, a string, JSON text, one of a
// list, or true / false.
enum class ValueKind { none, integer, real, text, json, choice, boolean };
std::string_view value_kind_name(ValueKind k);  // "none", "int", "float", "string", "json", "choice", "bool"

struct ArgSpec {
  ValueKind kind = ValueKind::text;
  std::vector<std::string> choices;  // kind == choice
  std::string dest;                  // the setting it writes (aliases share it); "" = the flag itself
};

class EngineArgs {
 public:
  // The pinned argument list of `e` in data_dir/engines/ (kPinnedFiles).
  static EngineArgs pinned(plan::Engine e, const std::filesystem::path& data_dir);
  // One captured list; errors are core::InputError naming the file and the field.
  static EngineArgs load(const std::filesystem::path& file);

  plan::Engine engine() const { return engine_; }
  const std::string& version() const { return version_; }
  const std::string& command() const { return command_; }  // e.g. "vllm serve"
  const std::string& how() const { return how_; }
  // The spec of a flag ("--tp_size") or of a YAML field ("kv_cache_config.dtype").
  const ArgSpec* flag(std::string_view name) const;
  const ArgSpec* yaml_field(std::string_view dotted) const;
  // The list holds the fields of the nested config `parent` ("kv_cache_config.*").
  bool yaml_expands(std::string_view parent) const;
  // A YAML field the engine takes: one the list has, or one inside a listed field whose
  // own fields the list does not hold (taken on that field's word:
  // "moe_config.load_balancer.num_slots").
  bool yaml_accepts(std::string_view dotted) const;
  // A flag of another subcommand ("disaggregated"), where the list has it.
  const ArgSpec* subcommand_flag(std::string_view subcommand, std::string_view name) const;
  size_t flag_count() const { return flags_.size(); }
  // The setting a flag writes: its spec's dest, else the flag itself.
  std::string dest_of(std::string_view flag) const;

  // `value` as the flag's spec takes it; an error (std::invalid_argument) says why not.
  static void check_value(const std::string& name, const ArgSpec& spec, const std::string& value);

 private:
  plan::Engine engine_ = plan::Engine::vllm;
  std::string version_, command_, how_;
  std::map<std::string, ArgSpec, std::less<>> flags_, yaml_;
  std::map<std::string, std::map<std::string, ArgSpec, std::less<>>, std::less<>> subcommands_;
};

// The argument list files the project pins, one per engine.
std::string_view pinned_file(plan::Engine e);

}  // namespace dayzero::deploy
