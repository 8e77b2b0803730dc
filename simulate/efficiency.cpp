#include "simulate/efficiency.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::simulate {

namespace {

using core::Fields;

double fraction(Fields& f, const std::string& key, double fallback) {
  const double v = f.opt_double(key, fallback);
  if (!(v > 0 && v <= 1)) f.fail(key, "must be a fraction in (0, 1]");
  return v;
}

// Reads the figures present in `j` over `base`.
Efficiency read(const nlohmann::json& j, const std::string& file, const std::string& path, Efficiency base,
                std::string& source) {
  if (!j.is_object()) throw core::InputError(file, path, "", "expected an object");
  Fields f(j, file, path + ".");
  base.gemm_compute = fraction(f, "gemm_compute", base.gemm_compute);
  base.gemm_memory = fraction(f, "gemm_memory", base.gemm_memory);
  base.attention_compute = fraction(f, "attention_compute", base.attention_compute);
  base.attention_memory = fraction(f, "attention_memory", base.attention_memory);
  base.elementwise_memory = fraction(f, "elementwise_memory", base.elementwise_memory);
  base.kernel_overhead_s = f.opt_double("kernel_overhead_s", base.kernel_overhead_s);
  if (base.kernel_overhead_s < 0 || base.kernel_overhead_s > 1e-3) f.fail("kernel_overhead_s", "must be in [0, 1 ms]");
  base.collective_efficiency = fraction(f, "collective_efficiency", base.collective_efficiency);
  base.tile_rows = static_cast<int>(f.opt_int("tile_rows", base.tile_rows, 1, std::numeric_limits<int>::max()));
  source = f.opt_string("source", "");
  if (source.empty()) f.fail("source", "every entry must say where its figures come from");
  f.reject_unknown();
  return base;
}

}  // namespace

EfficiencyTable EfficiencyTable::load(const std::filesystem::path& path) {
  return from_json(core::read_json_file(path), path.string());
}

EfficiencyTable EfficiencyTable::from_json(const nlohmann::json& j, const std::string& file) {
  Fields top(j, file);
  (void)top.opt_string("description", "");
  const nlohmann::json* def = top.opt_object("default");
  if (!def) top.fail("default", "required field is missing");
  EfficiencyTable t;
  t.default_ = read(*def, file, "default", Efficiency{}, t.default_source_);
  if (const nlohmann::json* devices = top.opt_object("devices")) {
    for (const auto& [name, entry] : devices->items()) {
      std::string source;
      const Efficiency e = read(entry, file, "devices." + name, t.default_, source);
      t.devices_[name] = {e, source};
    }
  }
  top.reject_unknown();
  return t;
}

EfficiencyTable EfficiencyTable::load_builtin(const std::filesystem::path& data_dir) {
  return load(data_dir / "devices" / "efficiency.json");
}

Efficiency EfficiencyTable::for_device(const std::string& name) const {
  const auto it = devices_.find(name);
  return it == devices_.end() ? default_ : it->second.first;
}

std::string EfficiencyTable::source_for(const std::string& name) const {
  const auto it = devices_.find(name);
  return it == devices_.end() ? default_source_ : it->second.second;
}

nlohmann::json efficiency_to_json(const Efficiency& e) {
  return {{"gemm_compute", e.gemm_compute},
          {"gemm_memory", e.gemm_memory},
          {"attention_compute", e.attention_compute},
          {"attention_memory", e.attention_memory},
          {"elementwise_memory", e.elementwise_memory},
          {"kernel_overhead_s", e.kernel_overhead_s},
          {"collective_efficiency", e.collective_efficiency},
          {"tile_rows", e.tile_rows}};
}

std::vector<std::string> EfficiencyTable::device_names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : devices_) names.push_back(name);
  return names;
}

void EfficiencyTable::set_default(const Efficiency& e, std::string source) {
  default_ = e;
  default_source_ = std::move(source);
}

void EfficiencyTable::set_device(const std::string& name, const Efficiency& e, std::string source) {
  devices_[name] = {e, std::move(source)};
}

nlohmann::json EfficiencyTable::to_json(const std::string& description) const {
  nlohmann::json def = efficiency_to_json(default_);
  def["source"] = default_source_;
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [name, entry] : devices_) {
    devices[name] = efficiency_to_json(entry.first);
    devices[name]["source"] = entry.second;
  }
  return {{"description", description}, {"default", def}, {"devices", devices}};
}

void EfficiencyTable::save(const std::filesystem::path& file, const std::string& description) const {
  core::write_file_atomically(file, to_json(description).dump(2) + "\n", "efficiency table");
}

}  // namespace dayzero::simulate
