#pragma once
// The release-day report's charts (`dayzero report` draws them offscreen through
// dayzero-gui --render-report; the window's File > Save report... in-process): the
// chosen plan's memory per rank against capacity, the Pareto front of the search with
// the chosen plan highlighted, and its latency curves — the app's own widgets.

#include <QString>

#include "report/release_report.h"

namespace dayzero::gui {

// memory.png, pareto.png and sweep.png of `in` into `dir`. False with `error` set.
bool render_report_charts(const report::Inputs& in, const QString& dir, QString* error);
// The same for a scenario, searched and prepared as `dayzero report` does.
bool render_report_pngs(const QString& scenario_file, const QString& engine, const QString& dir, QString* error);

}  // namespace dayzero::gui
