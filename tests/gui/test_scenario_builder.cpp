// File > New scenario under QT_QPA_PLATFORM=offscreen: the dialog's choices become
// a scenario (and an edited cluster) that search::load_scenario and the cluster
// loader accept, with the edited values, and whose search runs to the end; a
// broken choice is an error, not a crash.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QMessageBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/data_dir.h"
#include "gui/main_window.h"
#include "gui/plan_details.h"
#include "gui/scenario_builder.h"
#include "gui/scenario_dialog.h"
#include "search/scenario.h"
#include "search/session.h"
#include "topology/cluster.h"
#include "topology/device.h"

using namespace dayzero;
using gui::MainWindow;

class TestScenarioBuilder : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> w_;

 private slots:
  void initTestCase() {
    w_ = std::make_unique<MainWindow>();
    w_->runner()->setThreads(1);
    w_->resize(1200, 800);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
  }

  void dialogListsShippedChoices() {
    auto* d = w_->scenarioDialog();
    QVERIFY(d->modelBox()->findText("Qwen3-30B-A3B") >= 0);
    QVERIFY(d->modelBox()->findText("DeepSeek-V3") >= 0);
    QVERIFY(d->clusterBox()->findText("h200-2x8") >= 0);
    QVERIFY(d->deviceBox()->findText("H100-SXM") >= 0);
    QVERIFY(d->deviceBox()->count() >= 3);
    // A cluster's shape fills the editors; NICs only with a network between nodes.
    d->clusterBox()->setCurrentText("h200-2x8");
    QCOMPARE(d->nodesBox()->value(), 2);
    QCOMPARE(d->devicesPerNodeBox()->value(), 8);
    QCOMPARE(d->deviceBox()->currentText(), QString("H200-SXM"));
    QCOMPARE(d->nicsBox()->value(), 8);
    QVERIFY(d->nicsBox()->isEnabled());
    QVERIFY(!d->spec().cluster_edit);  // unchanged: the shipped file is used as it is
    d->clusterBox()->setCurrentText("h100x8");
    QVERIFY(!d->nicsBox()->isEnabled());
  }

  void editedClusterLoadsWithEditedValues() {
    auto* d = w_->scenarioDialog();
    d->clusterBox()->setCurrentText("h200-2x8");
    d->nodesBox()->setValue(4);
    d->devicesPerNodeBox()->setValue(4);
    d->deviceBox()->setCurrentText("H100-SXM");
    d->nicsBox()->setValue(2);
    d->nicBandwidthBox()->setValue(25);
    const gui::ScenarioSpec spec = d->spec();
    QVERIFY(spec.cluster_edit);
    QTemporaryDir dir;
    const auto file = gui::write_scenario(spec, dir.path().toStdString(), "s", core::data_dir());
    const search::Session session = search::load_session(file, core::data_dir());
    const auto& c = session.cluster;
    QCOMPARE(c.config().nodes, 4);
    QCOMPARE(c.config().devices_per_node, 4);
    QCOMPARE(c.config().device, std::string("H100-SXM"));
    QCOMPARE(c.config().nics.per_node, 2);
    QCOMPARE(c.config().nics.bw_Bps, 25e9);
    QCOMPARE(c.num_devices(), 16u);
    // A one-node cluster given a second node gets NICs and a fabric between them.
    d->clusterBox()->setCurrentText("h100x1");
    d->nodesBox()->setValue(2);
    QVERIFY(d->nicsBox()->isEnabled());
    const auto file2 = gui::write_scenario(d->spec(), dir.path().toStdString(), "s2", core::data_dir());
    const search::Session session2 = search::load_session(file2, core::data_dir());
    const auto& c2 = session2.cluster;
    QCOMPARE(c2.num_devices(), 2u);
    QVERIFY(c2.config().inter_node.fabric != topology::InterFabric::none);
  }

  void builtScenarioSearchesToTheEnd() {
    // Qwen3-30B-A3B on an H100 node cut down to 1 x 2, with a workload and an SLA.
    auto* d = w_->scenarioDialog();
    d->modelBox()->setCurrentText("Qwen3-30B-A3B");
    d->clusterBox()->setCurrentText("h100x8");
    d->devicesPerNodeBox()->setValue(2);
    d->inputLenBox()->setValue(2048);
    d->outputLenBox()->setValue(128);
    d->concurrencyBox()->setValue(32);
    d->prefixHitBox()->setValue(0.25);
    d->zipfBox()->setValue(0.5);
    d->maxTpotBox()->setValue(80);
    d->objectiveBox()->setCurrentText("latency");
    QSignalSpy finished(w_.get(), &MainWindow::searchFinished);
    d->accept();  // through the dialog, as OK does
    QVERIFY2(d->lastError().isEmpty(), qPrintable(d->lastError()));
    QVERIFY(finished.wait(120000));
    const auto& s = *w_->outcome().session;
    QCOMPARE(s.cluster.num_devices(), 2u);
    QCOMPARE(s.scenario.model_path.filename().string(), std::string("Qwen3-30B-A3B"));
    QCOMPARE(s.scenario.workload.input_len, int64_t{2048});
    QCOMPARE(s.scenario.workload.output_len, int64_t{128});
    QCOMPARE(s.scenario.workload.batch, int64_t{32});
    QCOMPARE(s.scenario.workload.prefix_hit_rate, 0.25);
    QCOMPARE(s.scenario.workload.routing_zipf_s, 0.5);
    QCOMPARE(s.scenario.sla.max_tpot_s, 0.08);
    QCOMPARE(s.scenario.sla.max_ttft_s, 0.0);
    QVERIFY(s.scenario.objective == search::Objective::latency);
    QVERIFY(w_->outcome().result->candidates > 0);
    QVERIFY(w_->details()->plan().has_value());
    QVERIFY(w_->details()->plan()->world_size() <= 2);
  }

  void loaderErrorsAreMessagesNotCrashes() {
    auto* d = w_->scenarioDialog();
    // A device type the catalog lacks: the cluster loader's message, nothing searched.
    gui::ScenarioSpec spec = d->spec();
    QVERIFY(spec.cluster_edit);
    spec.cluster_edit->device = "no-such-device";
    QString error;
    QVERIFY(!w_->openSpec(spec, &error));
    QVERIFY(error.contains("no-such-device"));
    // A model path that does not exist: the dialog keeps its entries and shows the error.
    d->addModelPath("/nonexistent/config.json");
    d->accept();
    QVERIFY(d->lastError().contains("/nonexistent/config.json"));
    // A directory without a config.json: the scenario loads, the model loader fails on the worker.
    QTemporaryDir empty;
    QSignalSpy failed(w_.get(), &MainWindow::searchFailed);
    d->addModelPath(empty.path());
    d->accept();
    QVERIFY(d->lastError().isEmpty());
    QVERIFY(failed.wait(30000));
    QVERIFY(!failed.front().front().toString().isEmpty());
    const auto boxes = w_->findChildren<QMessageBox*>();  // shown without blocking
    QVERIFY(std::any_of(boxes.begin(), boxes.end(), [](QMessageBox* b) { return b->isVisible(); }));
  }

  void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestScenarioBuilder)
#include "test_scenario_builder.moc"
