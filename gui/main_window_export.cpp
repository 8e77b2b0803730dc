// The main window's exports: the selected plan, its launch files, the release report
// and the plan table (main_window.h).
#include <QApplication>
#include <QDir>
#include <QLabel>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "deploy/launch.h"
#include "gui/main_window.h"
#include "gui/plan_details.h"
#include "gui/plan_table_model.h"
#include "gui/report_charts.h"
#include "plan/plan_json.h"
#include "report/release_report.h"

namespace dayzero::gui {

bool MainWindow::exportPlan(const QString& file, QString* error) {
  const auto& plan = details_->plan();
  if (!plan) {
    if (error) *error = tr("No valid plan is selected.");
    return false;
  }
  try {
    const nlohmann::json prediction =
        details_->prediction() ? nlohmann::json(*details_->prediction()) : nlohmann::json();
    plan::save_plan(file.toStdString(), *plan, details_->prediction() ? &prediction : nullptr);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

bool MainWindow::exportLaunch(const QString& dir, plan::Engine engine, QString* error) {
  const auto& plan = details_->plan();
  if (!plan || !outcome_.session) {
    if (error) *error = tr("No valid plan is selected.");
    return false;
  }
  try {
    const search::Session& s = *outcome_.session;
    deploy::ExportOptions o;
    o.model_id = deploy::hf_id_of(core::data_dir(), s.scenario.model_path.string());
    if (o.model_id.empty()) o.model_id = "MODEL_ID";
    const deploy::EngineArgs args = deploy::EngineArgs::pinned(engine, core::data_dir());
    const deploy::Launch l = deploy::export_launch(engine, *plan, s.model, s.cluster, s.scenario.engine, o, args);
    const std::filesystem::path d = dir.toStdString();
    l.write_to(d);
    plan::save_plan((d / "plan.json").string(), *plan, nullptr);
    status_->setText(
        tr("Wrote %1 (%2 command(s))").arg(QString::fromStdString((d / "launch.sh").string())).arg(l.commands.size()));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

bool MainWindow::saveReport(const QString& dir, QString* error) {
  if (!outcome_.session || !outcome_.result || !outcome_.result->feasible()) {
    if (error) *error = tr("No search with a feasible plan to report on.");
    return false;
  }
  QApplication::setOverrideCursor(Qt::WaitCursor);
  bool ok = false;
  try {
    const report::Inputs in = report::prepare(outcome_.session, *outcome_.result, "");
    ok = render_report_charts(in, dir, error);
    if (ok) report::write_report(in, dir.toStdString(), true);
    if (ok) status_->setText(tr("Wrote %1").arg(QDir(dir).filePath("report.md")));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    ok = false;
  }
  QApplication::restoreOverrideCursor();
  return ok;
}

// Written as plans are (a temporary file, then a rename): a failed export never
// leaves a half-written table in place of an earlier one.
bool MainWindow::exportCsv(const QString& file, QString* error) {
  try {
    core::write_file_atomically(file.toStdString(), table_to_csv(*proxy_).toStdString(), "the plan table");
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

}  // namespace dayzero::gui
