// dayzero: the command-line entry point. Library code never prints or exits;
// this is the one place where errors become a message and an exit status.
#include <exception>
#include <iostream>

#include "cli/backends.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"DayZero: plan, simulate and validate large-model inference on GPU clusters"};
  app.set_version_flag("--version", "dayzero 0.1.0");
  app.require_subcommand(0, 1);
  dayzero::cli::register_backends();
  dayzero::cli::add_inspect_command(app);
  dayzero::cli::add_topo_command(app);
  dayzero::cli::add_check_command(app);
  dayzero::cli::add_synth_command(app);
  dayzero::cli::add_simulate_command(app);
  dayzero::cli::add_plan_command(app);
  dayzero::cli::add_run_command(app);
  dayzero::cli::add_calibrate_command(app);
  dayzero::cli::add_validate_command(app);
  dayzero::cli::add_serve_command(app);
  dayzero::cli::add_sweep_command(app);
  dayzero::cli::add_export_command(app);
  dayzero::cli::add_import_command(app);
  dayzero::cli::add_report_command(app);

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      dayzero::cli::run_default_plan();  // the built-in default scenario
    }
  } catch (const CLI::ParseError& e) {  // includes --help
    return app.exit(e);
  } catch (const dayzero::cli::ExitStatus& s) {
    return s.code;
  } catch (const std::exception& e) {
    std::cerr << "dayzero: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
