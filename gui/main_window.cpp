#include "gui/main_window.h"

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>
#include "core/data_dir.h"
#include "gui/curves_view.h"
#include "gui/measured_view.h"
#include "gui/pareto_chart.h"
#include "gui/plan_details.h"
#include "gui/plan_table_model.h"
#include "gui/scenario_dialog.h"

#include "plan/plan_json.h"

namespace dayzero::gui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      runner_(new SearchRunner(this)),
      model_(new PlanTableModel(this)),
      proxy_(new PlanFilterProxy(this)),
      table_(new QTableView),
      pareto_(new ParetoChart),
      details_(new PlanDetails),
      filter_(new QLineEdit),
      feasible_only_(new QCheckBox(tr("feasible only (fits, meets SLA)"))),
      progress_(new QProgressBar),
      cancel_(new QPushButton(tr("Cancel"))),
      rerun_(new QPushButton(tr("Run search"))),
      status_(new QLabel),
      tabs_(new QTabWidget),
      measured_(new MeasuredView),
      curves_(new CurvesView) {
  setWindowTitle(tr("DayZero"));
  proxy_->setSourceModel(model_);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideRight);
  filter_->setPlaceholderText(tr("filter layouts, e.g. ep16 or fp8"));
  filter_->setClearButtonEnabled(true);
  feasible_only_->setChecked(true);
  proxy_->setFeasibleOnly(true);

  auto* measured = new QWidget;
  auto* mv = new QVBoxLayout(measured);
  mv->setContentsMargins(6, 6, 6, 6);
  mv->addWidget(measured_);
  tabs_->addTab(buildPlansTab(), tr("Plans"));
  tabs_->addTab(curves_, tr("Curves"));
  tabs_->addTab(measured, tr("Predicted vs measured"));
  tabs_->setDocumentMode(true);
  setCentralWidget(tabs_);
  statusBar()->addWidget(status_, 1);
  progress_->setFormat(tr("%v / %m plans"));
  setBusy(false);
  buildMenus();
  connectSignals();
  status_->setText(tr("Open a scenario (File > Open) or build one (File > New scenario)."));
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::buildPlansTab() {
  auto* left = new QWidget;
  auto* lv = new QVBoxLayout(left);
  lv->setContentsMargins(0, 0, 0, 0);
  auto* fr = new QHBoxLayout;
  fr->addWidget(new QLabel(tr("Filter:")));
  fr->addWidget(filter_, 1);
  fr->addWidget(feasible_only_);
  lv->addLayout(fr);
  auto* vsplit = new QSplitter(Qt::Vertical);
  vsplit->addWidget(table_);
  vsplit->addWidget(pareto_);
  vsplit->setStretchFactor(0, 1);
  vsplit->setStretchFactor(1, 1);
  lv->addWidget(vsplit, 1);
  vsplit->setSizes({450, 450});

  auto* hsplit = new QSplitter(Qt::Horizontal);
  hsplit->addWidget(left);
  hsplit->addWidget(details_);
  hsplit->setStretchFactor(0, 5);
  hsplit->setStretchFactor(1, 6);
  hsplit->setSizes({780, 820});

  auto* top = new QHBoxLayout;
  top->addWidget(rerun_);
  top->addWidget(progress_, 1);
  top->addWidget(cancel_);
  auto* plans = new QWidget;
  auto* cv = new QVBoxLayout(plans);
  cv->setContentsMargins(6, 6, 6, 6);
  cv->addLayout(top);
  cv->addWidget(hsplit, 1);
  return plans;
}

void MainWindow::connectSignals() {
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(feasible_only_, &QCheckBox::toggled, proxy_, &PlanFilterProxy::setFeasibleOnly);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::onTableCurrentChanged);
  // Keep the selected plan's row selected and in view after sorting or filtering.
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, &MainWindow::syncTable);
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, &MainWindow::syncTable);
  connect(pareto_, &ParetoChart::planClicked, this, &MainWindow::selectPlan);
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelSearch);
  connect(rerun_, &QPushButton::clicked, this, [this] {
    if (!scenario_file_.isEmpty()) openScenario(scenario_file_);
  });
  connect(runner_, &SearchRunner::progress, this, [this](qulonglong done, qulonglong total, double elapsed) {
    progress_->setMaximum(static_cast<int>(total));
    progress_->setValue(static_cast<int>(done));
    status_->setText(tr("Searching %1: %2 s").arg(scenario_file_).arg(elapsed, 0, 'f', 1));
  });
  connect(runner_, &SearchRunner::finished, this, &MainWindow::onFinished);
  connect(runner_, &SearchRunner::failed, this, [this](const QString& message) {
    setBusy(false);
    status_->setText(tr("Failed: %1").arg(message));
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Search"), message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();  // not exec(): the window and the tests go on
    emit searchFailed(message);
  });
  connect(runner_, &SearchRunner::cancelled, this, [this] {
    setBusy(false);
    status_->setText(tr("Search cancelled (the previous result, if any, is still shown)"));
  });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open scenario..."), QKeySequence::Open, this, [this] {
    const QString f = QFileDialog::getOpenFileName(
        this, tr("Open scenario"), QString::fromStdString(core::data_dir().string()), tr("Scenario (*.json)"));
    if (!f.isEmpty()) openScenario(f);
  });
  file->addAction(tr("&New scenario..."), QKeySequence::New, this, &MainWindow::newScenario);
  file->addAction(tr("Open &measurements..."), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open measurements (dayzero run --out)"), QString(),
                                                   tr("Measurements (*.json)"));
    QString err;
    if (!f.isEmpty() && !openMeasurements(f, &err)) {
      auto* box = new QMessageBox(QMessageBox::Warning, tr("Open measurements"), err, QMessageBox::Ok, this);
      box->setAttribute(Qt::WA_DeleteOnClose);
      box->open();
    }
  });
  file->addAction(tr("Export selected plan as Plan &JSON..."), this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export plan"), "plan.json", tr("Plan JSON (*.json)"));
    QString err;
    if (!f.isEmpty() && !exportPlan(f, &err)) QMessageBox::warning(this, tr("Export plan"), err);
  });
  file->addAction(tr("Export table as &CSV..."), this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export table"), "plans.csv", tr("CSV (*.csv)"));
    QString err;
    if (!f.isEmpty() && !exportCsv(f, &err)) QMessageBox::warning(this, tr("Export table"), err);
  });
  file->addAction(tr("Export &launch..."), this, [this] {
    bool ok = false;
    const QString name =
        QInputDialog::getItem(this, tr("Export launch"), tr("Engine"), {"vllm", "sglang", "trtllm"}, 0, false, &ok);
    if (!ok) return;
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export launch: directory"));
    QString err;
    if (!dir.isEmpty() && !exportLaunch(dir, *plan::parse_engine(name.toStdString()), &err))
      QMessageBox::warning(this, tr("Export launch"), err);
  });
  file->addAction(tr("Save &report..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Save report: directory"));
    QString err;
    if (!dir.isEmpty() && !saveReport(dir, &err)) QMessageBox::warning(this, tr("Save report"), err);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::setBusy(bool busy) {
  cancel_->setEnabled(busy);
  rerun_->setEnabled(!busy && !scenario_file_.isEmpty());
  progress_->setVisible(true);
  if (!busy) progress_->setValue(progress_->maximum());
}

void MainWindow::openScenario(const QString& file) {
  scenario_file_ = file;
  progress_->setRange(0, 0);  // busy until the first report
  setBusy(true);
  status_->setText(tr("Loading %1...").arg(file));
  runner_->start(file);
}

ScenarioDialog* MainWindow::scenarioDialog() {
  if (!scenario_dialog_) {
    scenario_dialog_ = new ScenarioDialog(core::data_dir(), this);
    scenario_dialog_->setSubmit([this](const ScenarioSpec& spec, QString* error) { return openSpec(spec, error); });
  }
  return scenario_dialog_;
}

void MainWindow::newScenario() { scenarioDialog()->open(); }

bool MainWindow::openSpec(const ScenarioSpec& spec, QString* error) {
  if (!built_dir_) built_dir_ = std::make_unique<QTemporaryDir>();
  if (!built_dir_->isValid()) {
    if (error) *error = tr("Cannot make a temporary directory: %1").arg(built_dir_->errorString());
    built_dir_.reset();
    return false;
  }
  try {
    const auto file = write_scenario(spec, built_dir_->path().toStdString(),
                                     "scenario-" + std::to_string(++built_count_), core::data_dir());
    openScenario(QString::fromStdString(file.string()));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

void MainWindow::cancelSearch() { runner_->cancel(); }

bool MainWindow::openMeasurements(const QString& file, QString* error) {
  QString err;
  if (!measured_->open(file, &err)) {
    status_->setText(tr("Failed: %1").arg(err));
    if (error) *error = err;
    return false;
  }
  tabs_->setCurrentIndex(tabs_->indexOf(measured_->parentWidget()));
  status_->setText(tr("Measurements %1 re-costed on %2").arg(file, measured_->device()));
  return true;
}

void MainWindow::onFinished(const SearchOutcome& outcome) {
  outcome_ = outcome;
  selected_.reset();
  const auto& r = *outcome.result;
  model_->setResult(outcome.result);
  pareto_->setResult(outcome.result);
  details_->setSession(outcome.session);
  curves_->setSession(outcome.session);
  progress_->setRange(0, static_cast<int>(r.candidates));
  setBusy(false);
  table_->sortByColumn(PlanTableModel::TokSDev, Qt::DescendingOrder);  // best throughput per device first
  table_->resizeColumnsToContents();
  // The layout's dtypes have their own columns: show its parallel sizes, the rest in the tooltip.
  table_->setColumnWidth(PlanTableModel::Layout, std::min(table_->columnWidth(PlanTableModel::Layout),
                                                          table_->fontMetrics().horizontalAdvance(QString(30, 'x'))));
  size_t meets = 0;
  for (const auto& e : r.all) meets += e.meets_sla ? 1 : 0;
  const auto& s = *outcome.session;
  setWindowTitle(tr("DayZero — %1").arg(QString::fromStdString(s.scenario.name)));
  QString text =
      tr("%1: %2 on %3 (%4 x %5) — %6 plans considered, %7 evaluated, %8 feasible, %9 on the front; %10 s on %11 "
         "thread(s)")
          .arg(QString::fromStdString(s.scenario.name), QString::fromStdString(s.model.config.display_family()),
               QString::fromStdString(s.cluster.name()))
          .arg(s.cluster.num_devices())
          .arg(QString::fromStdString(s.cluster.device_spec().name))
          .arg(r.candidates)
          .arg(r.evaluated)
          .arg(meets)
          .arg(r.pareto.size())
          .arg(r.wall_s, 0, 'f', 2)
          .arg(r.threads);
  if (!r.feasible() && !r.suggestions.empty())
    text += tr(" — nothing feasible; would: %1").arg(QString::fromStdString(r.suggestions.front()));
  status_->setText(text);
  if (!r.top.empty()) selectPlan(r.top.front());
  emit searchFinished();
}

void MainWindow::onTableCurrentChanged() {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid()) return;
  selectPlan(current.data(PlanTableModel::PlanIndexRole).toULongLong());
}

void MainWindow::selectPlan(qulonglong plan) {
  const auto* r = model_->result();
  if (!r || plan >= r->all.size()) return;
  if (selected_ == plan) return;
  selected_ = plan;
  syncTable();
  pareto_->highlight(plan);
  details_->setPlan(&r->all[plan]);
  curves_->setPlan(&r->all[plan]);
  emit selectionChanged(plan);
}

void MainWindow::syncTable() {
  if (!selected_) return;
  const QModelIndex row = proxy_->mapFromSource(model_->index(static_cast<int>(*selected_), 0));
  if (!row.isValid()) return;  // filtered out: the plan stays selected on the chart and in the details
  if (table_->selectionModel()->currentIndex().row() != row.row() ||
      !table_->selectionModel()->isRowSelected(row.row()))
    table_->selectionModel()->setCurrentIndex(row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(row);
}

}  // namespace dayzero::gui
