#include "search/session.h"

#include "topology/device.h"

namespace dayzero::search {

Session load_session(const std::filesystem::path& scenario_file, const std::filesystem::path& data_dir,
                     const std::filesystem::path& extra_catalog) {
  return make_session(load_scenario(scenario_file), data_dir, extra_catalog);
}

Session make_session(Scenario s, const std::filesystem::path& data_dir, const std::filesystem::path& extra_catalog) {
  model::Model m = load_scenario_model(s);
  topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(data_dir);
  if (!extra_catalog.empty()) catalog.add_file(extra_catalog);
  topology::Cluster c = topology::Cluster::load(s.cluster_path, catalog);
  const auto table = simulate::EfficiencyTable::load_builtin(data_dir);
  const std::string& device = c.device_spec().name;
  simulate::Efficiency eff = table.for_device(device);
  std::string source = table.source_for(device);
  return Session{std::move(s), std::move(m), std::move(c), eff, std::move(source)};
}

}  // namespace dayzero::search
