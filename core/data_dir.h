#pragma once
// Where DayZero's shipped data lives (model configs, clusters, the device catalog,
// efficiency tables, scenarios): $DAYZERO_DATA_DIR when set, else the source
// tree's scenarios/ folder this build was configured from.

#include <filesystem>

namespace dayzero::core {

std::filesystem::path data_dir();

}  // namespace dayzero::core
