#pragma once
// The command line's text: core/text.h's number formatting, numbers for JSON reports,
// and how a model or a cluster argument is found.

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/text.h"

namespace dayzero::cli {

using core::billions;
using core::fixed;
using core::gb_and_gib;
using core::pad_left;
using core::pad_right;
using core::today_utc;
using core::with_commas;

// A signed error in percent with one decimal: "+12.3", "-4.0", "0.0" (never "-0.0"),
// "-" where it is not finite.
std::string signed_pct(double p);

// A number for a JSON report: null where it is NaN or infinite (no JSON number is).
nlohmann::json finite_or_null(double v);

// A model argument: an existing path, else the name of a bundled model folder.
std::filesystem::path resolve_model_path(const std::string& arg);
// A cluster argument: an existing path, else a bundled cluster name (scenarios/clusters/NAME.json).
std::filesystem::path resolve_cluster_path(const std::string& arg);

}  // namespace dayzero::cli
