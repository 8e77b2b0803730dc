// The GUI under QT_QPA_PLATFORM=offscreen: a scenario searched to the end on the
// worker thread, Cancel, the plan table model (QAbstractItemModelTester), the
// selection kept in sync between table and Pareto chart (a real mouse click on a
// point too), what-if (device count included), and export of a
// plan (re-imported with load_plan) and of the table (CSV).
#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QGraphicsRectItem>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "gui/cluster_view.h"
#include "gui/curves_view.h"
#include "gui/main_window.h"
#include "gui/pareto_chart.h"
#include "gui/plan_details.h"
#include "gui/plan_table_model.h"
#include "gui/sweep_chart.h"
#include "plan/plan_json.h"
#include "topology/device.h"

using namespace dayzero;
using gui::MainWindow;

namespace {
const QString kScenario = QStringLiteral(DAYZERO_DATA_DIR "/llama-3.1-70b-h100x8.json");
}

class TestGui : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> w_;

  const search::SearchResult& result() const { return *w_->outcome().result; }
  size_t planOfRow(int proxy_row) const {
    return w_->proxy()->index(proxy_row, 0).data(gui::PlanTableModel::PlanIndexRole).toULongLong();
  }

 private slots:
  void initTestCase() {
    w_ = std::make_unique<MainWindow>();
    w_->runner()->setThreads(1);
    w_->resize(1400, 900);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
  }

  void cancelDropsTheRun() {
    QSignalSpy finished(w_.get(), &MainWindow::searchFinished);
    QSignalSpy cancelled(w_->runner(), &gui::SearchRunner::cancelled);
    w_->openScenario(kScenario);
    QVERIFY(w_->cancelButton()->isEnabled());
    w_->cancelSearch();
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!w_->cancelButton()->isEnabled());
    QTest::qWait(1500);  // the worker ends; its result is dropped
    QCOMPARE(finished.count(), 0);
    QVERIFY(!w_->outcome().result);
  }

  void searchRunsToTheEnd() {
    QSignalSpy finished(w_.get(), &MainWindow::searchFinished);
    w_->openScenario(kScenario);
    QVERIFY(finished.wait(60000));
    QVERIFY(w_->outcome().result);
    QVERIFY(result().candidates > 0);
    QVERIFY(result().feasible());
    QCOMPARE(w_->tableModel()->rowCount(), static_cast<int>(result().all.size()));
    QCOMPARE(w_->selectedPlan(), std::optional<size_t>(result().top.front()));
    QVERIFY(w_->details()->prediction().has_value());
  }

  void tableModelPassesTester() {
    QAbstractItemModelTester tester(w_->tableModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester proxy_tester(w_->proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    w_->tableModel()->setResult(w_->outcome().result);  // a reset under the testers
    QVERIFY(w_->tableModel()->headerData(gui::PlanTableModel::TpotMs, Qt::Horizontal).toString().contains("ms"));
  }

  void filterAndSort() {
    auto* proxy = w_->proxy();
    w_->feasibleOnlyBox()->setChecked(false);
    QCOMPARE(proxy->rowCount(), w_->tableModel()->rowCount());
    w_->feasibleOnlyBox()->setChecked(true);
    int feasible = 0;
    for (const auto& e : result().all) feasible += e.meets_sla ? 1 : 0;
    QCOMPARE(proxy->rowCount(), feasible);
    w_->filterEdit()->setText("tp8");
    QVERIFY(proxy->rowCount() > 0);
    for (int r = 0; r < proxy->rowCount(); ++r)
      QVERIFY(proxy->index(r, gui::PlanTableModel::Layout).data().toString().contains("tp8"));
    w_->filterEdit()->clear();
    w_->table()->sortByColumn(gui::PlanTableModel::TokSDev, Qt::DescendingOrder);
    for (int r = 1; r < proxy->rowCount(); ++r)
      QVERIFY(proxy->index(r - 1, gui::PlanTableModel::TokSDev).data(gui::PlanTableModel::SortRole).toDouble() >=
              proxy->index(r, gui::PlanTableModel::TokSDev).data(gui::PlanTableModel::SortRole).toDouble());
  }

  void selectingARowHighlightsItsPoint() {
    const int row = 3;
    w_->table()->selectRow(row);
    const size_t plan = planOfRow(row);
    QCOMPARE(w_->selectedPlan(), std::optional<size_t>(plan));
    QCOMPARE(w_->pareto()->highlighted(), std::optional<size_t>(plan));
    QCOMPARE(w_->pareto()->selectedSeries()->count(), 1);
    QCOMPARE(w_->pareto()->selectedSeries()->at(0), gui::ParetoChart::pointOf(result().all[plan]));
  }

  void clickingAPointSelectsItsRow() {
    // A front plan other than the selected one, clicked on the chart.
    size_t target = result().pareto.front();
    if (w_->selectedPlan() == target) target = result().pareto.back();
    QVERIFY(w_->selectedPlan() != target);
    // The series' own click signal, as Qt Charts emits it for a marker under the mouse
    // (mouseClickOnAPointSelectsItsRow clicks with the mouse).
    emit w_->pareto()->frontSeries()->clicked(gui::ParetoChart::pointOf(result().all[target]));
    QTRY_COMPARE(w_->selectedPlan(), std::optional<size_t>(target));
    const QModelIndex current = w_->table()->selectionModel()->currentIndex();
    QVERIFY(current.isValid());
    QCOMPARE(static_cast<size_t>(current.data(gui::PlanTableModel::PlanIndexRole).toULongLong()), target);
    QVERIFY(w_->table()->selectionModel()->isRowSelected(current.row()));
    QCOMPARE(w_->pareto()->highlighted(), std::optional<size_t>(target));
  }

  void mouseClickOnAPointSelectsItsRow() {
    // A real click: the plan's value mapped to the chart, then to the view's viewport.
    auto* view = w_->pareto();
    size_t target = result().pareto.back();
    if (w_->selectedPlan() == target) target = result().pareto.front();
    const std::optional<size_t> before = w_->selectedPlan();
    QVERIFY(before != target);
    const QPointF value = gui::ParetoChart::pointOf(result().all[target]);
    const QPointF in_chart = view->chart()->mapToPosition(value, view->frontSeries());
    const QPoint pos = view->mapFromScene(view->chart()->mapToScene(in_chart));
    QVERIFY(view->viewport()->rect().contains(pos));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, pos);
    QTRY_VERIFY(w_->selectedPlan() != before);
    QCOMPARE(gui::ParetoChart::pointOf(result().all[*w_->selectedPlan()]), value);  // that point (or a plan on it)
    const QModelIndex current = w_->table()->selectionModel()->currentIndex();
    QVERIFY(current.isValid());
    QCOMPARE(static_cast<size_t>(current.data(gui::PlanTableModel::PlanIndexRole).toULongLong()), *w_->selectedPlan());
  }

  void exportAndReimportPlan() {
    QTemporaryDir dir;
    const QString file = dir.filePath("plan.json");
    QString error;
    QVERIFY2(w_->exportPlan(file, &error), qPrintable(error));
    const plan::Plan loaded = plan::load_plan(file.toStdString());
    const plan::Plan& searched = result().all[*w_->selectedPlan()].plan;
    QCOMPARE(QString::fromStdString(plan::plan_to_json(loaded).dump()),
             QString::fromStdString(plan::plan_to_json(searched).dump()));
  }

  void exportCsv() {
    QTemporaryDir dir;
    const QString file = dir.filePath("plans.csv");
    QString error;
    QVERIFY2(w_->exportCsv(file, &error), qPrintable(error));
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), w_->proxy()->rowCount() + 1);
    QVERIFY(lines.front().contains("TPOT ms"));
    // Into a folder that does not exist: an error naming the file, nothing written.
    const QString missing = dir.filePath("no-such-folder/plans.csv");
    QVERIFY(!w_->exportCsv(missing, &error));
    QVERIFY2(error.contains("no-such-folder"), qPrintable(error));
    QVERIFY(!QFile::exists(missing));
  }

  // File > Export launch... and Save report...: the selected plan as an engine's
  // launch, and the search's release-day report with the app's charts.
  void exportLaunchAndSaveReport() {
    QTemporaryDir dir;
    QString error;
    QVERIFY2(w_->exportLaunch(dir.path(), plan::Engine::sglang, &error), qPrintable(error));
    QFile script(dir.filePath("launch.sh"));
    QVERIFY(script.open(QIODevice::ReadOnly | QIODevice::Text));
    QVERIFY(QString::fromUtf8(script.readAll()).contains("python3 -m sglang.launch_server"));
    QVERIFY(QFile::exists(dir.filePath("plan.json")));
    QVERIFY2(w_->saveReport(dir.path(), &error), qPrintable(error));
    for (const char* png : {"memory.png", "pareto.png", "sweep.png"})
      QVERIFY2(QFileInfo(dir.filePath(png)).size() > 1000, png);
    QFile md(dir.filePath("report.md"));
    QVERIFY(md.open(QIODevice::ReadOnly | QIODevice::Text));
    const QString text = QString::fromUtf8(md.readAll());
    QVERIFY(text.contains("## Launch"));
    QVERIFY(text.contains("![Memory per rank"));
  }

  void whatIfResimulates() {
    auto* d = w_->details();
    const int64_t batch = d->plan()->workload.batch;
    const double tpot = d->prediction()->tpot_s;
    QSignalSpy spy(d, &gui::PlanDetails::resimulated);
    d->batchBox()->setValue(static_cast<int>(batch * 2));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(d->plan()->workload.batch, batch * 2);
    QVERIFY(d->prediction()->tpot_s != tpot);
    d->kvBox()->setCurrentText("fp8");
    QCOMPARE(d->plan()->dtypes.kv_cache, plan::KvDtype::fp8);
    // The exported plan is the one shown.
    QTemporaryDir dir;
    QVERIFY(w_->exportPlan(dir.filePath("p.json")));
    QCOMPARE(plan::load_plan(dir.filePath("p.json").toStdString()).workload.batch, batch * 2);
  }

  // A disaggregated plan: one tp-8 prefill worker on node 0, one tp-2 dp-8 decode worker
  // on nodes 1 and 2, node 3 unused; every device's tooltip names its worker.
  void clusterShowsBothPools() {
    const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
    const auto cluster = topology::Cluster::load(DAYZERO_DATA_DIR "/clusters/h200-4x8.json", catalog);
    plan::Plan p;
    p.attention = {2, 8};
    p.moe = {1, 16, 1};
    p.workload.batch = 64;
    p.disaggregated = {1, 1, {1, {8, 1}, {1, 8, 1}, 1}};
    gui::ClusterView view;
    view.setCluster(&cluster);
    view.setPlan(&p);
    int prefill = 0, decode = 0, unused = 0;
    for (QGraphicsItem* item : view.scene()->items()) {
      const QString tip = item->toolTip();
      prefill += tip.contains("prefill worker 0") ? 1 : 0;
      decode += tip.contains("decode worker 0") ? 1 : 0;
      unused += tip.contains("unused") ? 1 : 0;
      if (tip.startsWith("n0, device 3")) QVERIFY2(tip.contains("prefill worker 0, rank 3"), qPrintable(tip));
      if (tip.startsWith("n1, device 8")) QVERIFY2(tip.contains("decode worker 0, rank 0"), qPrintable(tip));
    }
    QCOMPARE(prefill, 8);
    QCOMPARE(decode, 16);
    QCOMPARE(unused, 8);
  }

  void clusterGroups() {
    const plan::Plan& p = *w_->details()->plan();
    using C = gui::ClusterView::Colouring;
    for (int r = 0; r < p.world_size(); ++r) {
      QCOMPARE(gui::ClusterView::groupOf(p, r, C::PpStage), p.stage_of(r));
      for (int q : p.attn_tp_group(r))
        QCOMPARE(gui::ClusterView::groupOf(p, q, C::TpGroup), gui::ClusterView::groupOf(p, r, C::TpGroup));
      for (int q : p.ep_group(r))
        QCOMPARE(gui::ClusterView::groupOf(p, q, C::EpGroup), gui::ClusterView::groupOf(p, r, C::EpGroup));
    }
  }

  void whatIfDeviceCount() {
    // A plan with pp x tp = 4 on all 8 devices (2 replicas), re-simulated on 4 and then on 6.
    const auto& all = result().all;
    std::optional<size_t> pick;
    for (size_t i = 0; i < all.size() && !pick; ++i)
      if (all[i].plan.world_size() == 8 && all[i].plan.pp * all[i].plan.attention.tp == 4 && all[i].prediction.fits)
        pick = i;
    QVERIFY(pick);
    w_->selectPlan(*pick);
    auto* d = w_->details();
    d->setPlan(&all[*pick]);  // knobs as the search found it
    QCOMPARE(d->devicesBox()->value(), 8);
    QCOMPARE(d->devicesBox()->maximum(), 8);
    QSignalSpy spy(d, &gui::PlanDetails::resimulated);
    d->devicesBox()->setValue(4);
    QCOMPARE(spy.count(), 1);
    QVERIFY2(d->plan().has_value(), qPrintable(d->error()));
    QCOMPARE(d->plan()->world_size(), 4);
    QCOMPARE(d->plan()->attention.dp, all[*pick].plan.attention.dp / 2);
    QCOMPARE(d->prediction()->ranks.size(), size_t{4});
    d->devicesBox()->setValue(6);  // not a multiple of pp x tp = 4
    QVERIFY(!d->plan().has_value());
    QVERIFY(!d->prediction().has_value());
    QVERIFY(d->error().contains("pp x tp"));
    QVERIFY(d->summaryLabel()->text().contains("Not a valid plan"));
    d->devicesBox()->setValue(8);
    QCOMPARE(d->plan()->world_size(), 8);
  }

  // The Curves tab serves the selected plan at 1, 2, 4 ... in flight and draws TTFT and
  // TPOT (mean, p90, the scenario's SLA as a two-point line) and throughput.
  void curvesTabDrawsTheSelectedPlan() {
    gui::CurvesView* curves = w_->curvesView();
    QSignalSpy drawn(curves, &gui::CurvesView::sweepDrawn);
    w_->tabs()->setCurrentWidget(curves);
    QVERIFY(drawn.count() > 0 || drawn.wait(60000));
    const serve::Sweep& sweep = *curves->sweep();
    const plan::Plan& p = result().all[*w_->selectedPlan()].plan;
    QCOMPARE(sweep.points.size(), gui::CurvesView::concurrencies(p).size());
    QCOMPARE(sweep.points.front().x, 1.0);
    for (const auto& pt : sweep.points) QVERIFY2(pt.error.empty(), pt.error.c_str());
    QCOMPARE(sweep.max_tpot_s, w_->outcome().session->scenario.sla.max_tpot_s);
    QStringList names;
    for (QAbstractSeries* s : curves->chart()->tpotChart()->series()) names << s->name();
    QCOMPARE(names, (QStringList{"mean", "p90", "SLA"}));
    const auto* sla = static_cast<QLineSeries*>(curves->chart()->tpotChart()->series().back());
    QCOMPARE(sla->at(0).y(), sweep.max_tpot_s * 1e3);
    QCOMPARE(curves->chart()->throughputChart()->series().size(), 2);
    QTemporaryDir dir;
    QString error;
    QVERIFY2(gui::render_sweep_png(sweep, dir.filePath("curves.png"), 1200, 400, &error), qPrintable(error));
    QVERIFY(QFile(dir.filePath("curves.png")).size() > 10000);
    QVERIFY(!gui::render_sweep_png(sweep, dir.filePath("no/such/dir/x.png"), 1200, 400, &error));
    w_->tabs()->setCurrentIndex(0);
  }

  void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
