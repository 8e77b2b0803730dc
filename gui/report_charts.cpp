// The report's charts (report_charts.h).
#include "gui/report_charts.h"

#include <QDir>
#include <QLayout>
#include <memory>

#include "core/data_dir.h"
#include "gui/pareto_chart.h"
#include "gui/plan_charts.h"
#include "gui/sweep_chart.h"

namespace dayzero::gui {

namespace {

bool save(QChartView& view, int width, int height, const QString& path, QString* error) {
  view.setAttribute(Qt::WA_DontShowOnScreen);
  view.resize(width, height);
  view.show();
  if (view.layout()) view.layout()->activate();
  if (view.grab().save(path, "PNG")) return true;
  if (error) *error = QObject::tr("cannot write %1").arg(path);
  return false;
}

}  // namespace

bool render_report_charts(const report::Inputs& in, const QString& dir, QString* error) {
  QDir().mkpath(dir);
  MemoryChart memory;
  memory.setPrediction(&in.best_full);
  if (!save(memory, 1400, 560, QDir(dir).filePath("memory.png"), error)) return false;
  ParetoChart pareto;
  pareto.setResult(std::make_shared<const search::SearchResult>(in.search));
  pareto.highlight(in.search.top.front());
  if (!save(pareto, 1400, 700, QDir(dir).filePath("pareto.png"), error)) return false;
  return render_sweep_png(in.sweep, QDir(dir).filePath("sweep.png"), 1800, 540, error);
}

bool render_report_pngs(const QString& scenario_file, const QString& engine, const QString& dir, QString* error) {
  try {
    const report::Inputs in = report::prepare(search::resolve_scenario(scenario_file.toStdString(), core::data_dir()),
                                              "", engine.toStdString());
    return render_report_charts(in, dir, error);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

}  // namespace dayzero::gui
