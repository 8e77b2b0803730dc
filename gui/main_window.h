#pragma once
// The main window: open a scenario, run its search on a worker thread (progress,
// Cancel), the plan table and the Pareto chart with one selection between them,
// the selected plan's details, and export (Plan JSON, CSV) in the "Plans" tab;
// a run's Measurements against the simulator's prediction of them in the
// "Predicted vs measured" tab (File > Open measurements).

#include <QMainWindow>
#include <memory>

#include <optional>
#include "plan/engine_settings.h"

#include "gui/scenario_builder.h"
#include "gui/search_runner.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;
class QTemporaryDir;

namespace dayzero::gui {

class ParetoChart;
class PlanDetails;
class PlanFilterProxy;
class PlanTableModel;
class ScenarioDialog;
class MeasuredView;
class CurvesView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  SearchRunner* runner() const { return runner_; }
  const SearchOutcome& outcome() const { return outcome_; }
  std::optional<size_t> selectedPlan() const { return selected_; }

  QTableView* table() const { return table_; }
  PlanTableModel* tableModel() const { return model_; }
  PlanFilterProxy* proxy() const { return proxy_; }
  ParetoChart* pareto() const { return pareto_; }
  PlanDetails* details() const { return details_; }
  QLineEdit* filterEdit() const { return filter_; }
  QCheckBox* feasibleOnlyBox() const { return feasible_only_; }
  QPushButton* cancelButton() const { return cancel_; }
  ScenarioDialog* scenarioDialog();  // File > New scenario... (made on first use)
  QTabWidget* tabs() const { return tabs_; }
  MeasuredView* measuredView() const { return measured_; }
  CurvesView* curvesView() const { return curves_; }

  // Opens a Measurements file in the "Predicted vs measured" tab and shows that
  // tab; false with the loader's message (file, field) when it cannot.
  bool openMeasurements(const QString& file, QString* error = nullptr);

  // Writes a built scenario (and its edited cluster) into the window's temporary
  // directory, checks them with the loaders and searches it like openScenario.
  bool openSpec(const ScenarioSpec& spec, QString* error = nullptr);

  // Writes the plan as shown (what-if knobs applied) with its prediction.
  bool exportPlan(const QString& file, QString* error = nullptr);
  // Writes the table's rows as filtered and sorted, every column.
  bool exportCsv(const QString& file, QString* error = nullptr);
  // The selected plan (as shown) as an engine's launch in `dir`: launch.sh, its files
  // and plan.json (deploy/launch.h); the engine's reason when it cannot run it.
  bool exportLaunch(const QString& dir, plan::Engine engine, QString* error = nullptr);
  // The release-day report of the search shown (report/release_report.h) with its
  // charts in `dir`.
  bool saveReport(const QString& dir, QString* error = nullptr);

 public slots:
  void openScenario(const QString& file);  // loads and searches on the worker thread
  void newScenario();                      // the New scenario dialog
  void selectPlan(qulonglong plan);
  void cancelSearch();

 signals:
  void searchFinished();
  void searchFailed(const QString& message);
  void selectionChanged(qulonglong plan);

 private:
  QWidget* buildPlansTab();  // the table, the Pareto chart and the details
  void buildMenus();
  void connectSignals();
  void onFinished(const SearchOutcome& outcome);
  void onTableCurrentChanged();
  void setBusy(bool busy);
  void syncTable();

  SearchRunner* runner_;
  SearchOutcome outcome_;
  std::optional<size_t> selected_;
  QString scenario_file_;
  PlanTableModel* model_;
  PlanFilterProxy* proxy_;
  QTableView* table_;
  ParetoChart* pareto_;
  PlanDetails* details_;
  QLineEdit* filter_;
  QCheckBox* feasible_only_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QPushButton* rerun_;
  QLabel* status_;
  QTabWidget* tabs_;
  MeasuredView* measured_;
  CurvesView* curves_;
  ScenarioDialog* scenario_dialog_ = nullptr;
  std::unique_ptr<QTemporaryDir> built_dir_;  // scenarios built in the app live here
  int built_count_ = 0;
};

}  // namespace dayzero::gui
