#pragma once
// Where serving predictions take their calibration from: the efficiency figures of
// the devices (simulate/efficiency.h) and the engines' host overheads
// (serve/engine_overheads.h), each a JSON file with its provenance.
//   ""           the shipped defaults: data_dir/devices/efficiency.json and
//                data_dir/devices/engine-overheads.json (the fit on the public rows)
//   a directory  DIR/efficiency.json and DIR/engine-overheads.json, as
//                `calibrate --bench --out DIR` writes them
//   a file       an efficiency table alone (`calibrate MEASUREMENTS --out F`), with
//                the shipped engine overheads

#include <filesystem>
#include <string>

#include "serve/engine_overheads.h"
#include "simulate/efficiency.h"

namespace dayzero::serve {

struct ServingCalibration {
  simulate::EfficiencyTable efficiency;
  EngineOverheadTable engines;
};

inline constexpr const char* kEfficiencyFile = "efficiency.json";
inline constexpr const char* kEngineOverheadsFile = "engine-overheads.json";

// Errors (a missing or malformed file) are core::InputError naming the file.
ServingCalibration load_serving_calibration(const std::filesystem::path& data_dir, const std::string& where);

}  // namespace dayzero::serve
