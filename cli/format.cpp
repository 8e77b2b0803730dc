#include "cli/format.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/data_dir.h"

namespace dayzero::cli {

std::string signed_pct(double p) {
  if (!std::isfinite(p)) return "-";
  if (std::abs(p) < 0.05) return "0.0";  // no "-0.0"
  return (p > 0 ? "+" : "") + fixed(p, 1);
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::filesystem::path resolve_model_path(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return arg;
  const auto bundled = core::data_dir() / "models" / arg;
  if (arg.find('/') == std::string::npos && std::filesystem::exists(bundled, ec)) return bundled;
  return arg;  // let the loader report the missing file by its given name
}

std::filesystem::path resolve_cluster_path(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return arg;
  const auto bundled = core::data_dir() / "clusters" / (arg + ".json");
  if (arg.find('/') == std::string::npos && std::filesystem::exists(bundled, ec)) return bundled;
  return arg;  // the loader reports the missing file by its given name
}

}  // namespace dayzero::cli
