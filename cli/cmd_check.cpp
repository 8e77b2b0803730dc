// dayzero check MODEL_DIR [--json]: a checkpoint against what its config.json
// says it must hold, from the safetensors headers alone.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/error.h"
#include "executor/registry.h"
#include "model/checkpoint.h"

namespace dayzero::cli {

namespace {

// Problems listed per category before "... and N more".
constexpr size_t kMaxListed = 20;

struct CheckOptions {
  std::string dir;
  bool json = false;
};

void list(std::ostream& out, const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return;
  out << "\n" << title << " (" << items.size() << ")\n";
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) out << "  " << items[i] << '\n';
  if (items.size() > kMaxListed) out << "  ... and " << items.size() - kMaxListed << " more\n";
}

std::vector<std::string> describe(const std::vector<model::TensorMismatch>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms) out.push_back(m.name + ": expected " + m.expected + ", found " + m.found + " in " + m.file);
  return out;
}

nlohmann::json coverage_json(const std::vector<executor::OpCoverage>& cov) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : cov)
    a.push_back({{"kind", model::op_kind_name(c.op.kind)}, {"variant", c.op.variant}, {"backends", c.backends}});
  return a;
}

// Which backend runs each op variant the model needs. Informational: a gap does
// not change the exit status, which is about the tensors.
void print_coverage(std::ostream& out, const std::vector<executor::OpCoverage>& cov) {
  out << "\nOperator coverage (backends:";
  for (const auto& b : executor::backend_registry()) out << ' ' << b.name << (b.available ? "" : " [not built]");
  out << ")\n  " << pad_right("op", 14) << pad_right("variant", 22) << "backends\n";
  size_t gaps = 0;
  for (const auto& c : cov) {
    std::string names;
    for (const auto& b : c.backends) names += (names.empty() ? "" : ", ") + b;
    if (c.backends.empty()) ++gaps;
    out << "  " << pad_right(std::string(model::op_kind_name(c.op.kind)), 14) << pad_right(c.op.variant, 22)
        << (names.empty() ? "none   <- no backend implements it" : names) << '\n';
  }
  out << "  " << cov.size() - gaps << " of " << cov.size() << " op variants have a kernel\n";
}

nlohmann::json to_json(const model::CheckReport& r) {
  auto mismatches = [](const std::vector<model::TensorMismatch>& ms) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& m : ms)
      a.push_back({{"name", m.name}, {"expected", m.expected}, {"found", m.found}, {"file", m.file}});
    return a;
  };
  return {{"ok", r.ok()},
          {"shards", r.shards},
          {"tensors_expected", r.tensors_expected},
          {"tensors_found", r.tensors_found},
          {"missing", r.missing},
          {"unexpected", r.unexpected},
          {"misshaped", mismatches(r.misshaped)},
          {"wrong_dtype", mismatches(r.wrong_dtype)},
          {"file_errors", r.file_errors},
          {"expected_bytes_by_dtype", r.expected_bytes_by_dtype},
          {"found_bytes_by_dtype", r.found_bytes_by_dtype},
          {"other_modality_tensors", r.other_modality_tensors},
          {"other_modality_bytes", r.other_modality_bytes}};
}

void report(const CheckOptions& o) {
  const auto dir = resolve_model_path(o.dir);
  const model::Model m = model::load_model(dir);
  const model::CheckReport r = model::check_checkpoint(m, dir);
  const auto coverage = executor::op_coverage(m);
  std::ostringstream out;
  if (o.json) {
    nlohmann::json j = to_json(r);
    j["op_coverage"] = coverage_json(coverage);
    out << j.dump(2) << '\n';
  } else {
    out << m.config.display_family() << " checkpoint " << dir.string() << ": " << r.shards << " shard(s), "
        << with_commas(r.tensors_found) << " tensors found, " << with_commas(r.tensors_expected) << " expected\n";
    out << "\nBytes by dtype (GB = 1e9 bytes)\n  " << pad_right("dtype", 10) << pad_left("expected", 20)
        << pad_left("found", 20) << '\n';
    std::map<std::string, std::pair<int64_t, int64_t>> rows;
    for (const auto& [d, b] : r.expected_bytes_by_dtype) rows[d].first = b;
    for (const auto& [d, b] : r.found_bytes_by_dtype) rows[d].second = b;
    for (const auto& [d, b] : rows)
      out << "  " << pad_right(d, 10) << pad_left(with_commas(b.first), 20) << pad_left(with_commas(b.second), 20)
          << (b.first != b.second ? "   <- differs" : "") << '\n';
    if (r.other_modality_tensors > 0)
      out << "  (besides " << with_commas(r.other_modality_tensors) << " tensors, "
          << with_commas(r.other_modality_bytes)
          << " bytes, of the wrapper's vision encoder and projector: not checked)\n";
    list(out, "File errors", r.file_errors);
    list(out, "Missing tensors", r.missing);
    list(out, "Unexpected tensors", r.unexpected);
    list(out, "Misshaped tensors", describe(r.misshaped));
    list(out, "Tensors with the wrong dtype", describe(r.wrong_dtype));
    print_coverage(out, coverage);
    out << '\n' << (r.ok() ? "OK: the checkpoint matches the model" : "MISMATCH: see above") << '\n';
  }
  std::cout << out.str() << std::flush;
  if (!r.ok()) throw ExitStatus{2};
}

// What `check --json` prints when there is no report (a model directory that is
// not one, a bad config.json): a JSON object, so that a script reading stdout sees
// why; stderr has the same one-line message and the exit status is 1, as in text mode.
nlohmann::json error_json(const std::exception& e) {
  nlohmann::json err = {{"message", e.what()}};
  if (const auto* in = dynamic_cast<const core::InputError*>(&e)) {
    err["file"] = in->file();
    if (!in->field().empty()) err["field"] = in->field();
    if (!in->value().empty()) err["value"] = in->value();
    err["problem"] = in->problem();
  }
  return {{"ok", false}, {"error", err}};
}

void run_check(const CheckOptions& o) {
  if (!o.json) return report(o);
  try {
    report(o);
  } catch (const std::exception& e) {
    // Parts of the input may not be UTF-8: replaced, not thrown on.
    std::cout << error_json(e).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
    throw;
  }
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Check a checkpoint directory against its config.json: missing, unexpected, misshaped and "
      "wrong-dtype tensors, bytes per dtype (reads only the safetensors headers), and which executor backends "
      "implement each op the model needs. Exit 2 on a tensor mismatch");
  cmd->add_option("model_dir", opts->dir, "Directory with config.json and model.safetensors (or an index and shards)")
      ->required();
  cmd->add_flag("--json", opts->json,
                "Print one JSON object (on an error too: {\"ok\": false, \"error\": {...}}, exit 1)");
  cmd->callback([opts] { run_check(*opts); });
}

}  // namespace dayzero::cli
