#pragma once
// The dayzero subcommands. Each add_*_command registers a subcommand, its options
// and its callback on the app. Callbacks write their report to stdout and signal
// failure by throwing: std::exception for errors (main prints its what() as one
// line and exits 1), ExitStatus for a clean report that still must exit non-zero.

#include <CLI/CLI.hpp>

namespace dayzero::cli {

struct ExitStatus {
  int code;
};

void add_inspect_command(CLI::App& app);
void add_topo_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_report_command(CLI::App& app);

// What `dayzero` with no subcommand runs: `plan` of the built-in default scenario.
void run_default_plan();

}  // namespace dayzero::cli
