#include "serve/calibration_files.h"

#include "core/error.h"

namespace dayzero::serve {

ServingCalibration load_serving_calibration(const std::filesystem::path& data_dir, const std::string& where) {
  namespace fs = std::filesystem;
  const fs::path shipped = data_dir / "devices";
  if (where.empty())
    return {simulate::EfficiencyTable::load(shipped / kEfficiencyFile),
            EngineOverheadTable::load(shipped / kEngineOverheadsFile)};
  std::error_code ec;
  if (fs::is_directory(where, ec)) {
    const fs::path dir(where);
    if (!fs::exists(dir / kEfficiencyFile, ec))
      throw core::InputError((dir / kEfficiencyFile).string(), "", "",
                             "a calibration directory holds efficiency.json and engine-overheads.json "
                             "(dayzero calibrate --bench FILE --out DIR)");
    return {simulate::EfficiencyTable::load(dir / kEfficiencyFile),
            EngineOverheadTable::load(dir / kEngineOverheadsFile)};
  }
  return {simulate::EfficiencyTable::load(where), EngineOverheadTable::load(shipped / kEngineOverheadsFile)};
}

}  // namespace dayzero::serve
