#pragma once
// Internal to cli/: charts drawn by dayzero-gui (the GUI's own Qt Charts code) under
// the offscreen platform, for commands that write PNGs (sweep, report).

#include <string>
#include <vector>

namespace dayzero::cli {

// Runs dayzero-gui (beside this binary) with `args` offscreen. Returns false, with a
// note on stderr naming `what`, when this build has no dayzero-gui (Qt 6 not found);
// throws std::runtime_error with Qt's notes when it fails.
bool draw_with_gui(const std::vector<std::string>& args, const std::string& what);

}  // namespace dayzero::cli
