// The "Predicted vs measured" tab under QT_QPA_PLATFORM=offscreen, on a committed
// Measurements fixture (tests/fixtures/measurements/tiny_llama.json): the table
// model (QAbstractItemModelTester) against simulate::validate's report, sorting,
// the per-kind bar charts, another device, a calibration file, and bad files.
#include <QAbstractItemModelTester>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>
#include <fstream>

#include "core/data_dir.h"
#include "gui/main_window.h"
#include "gui/measured_view.h"
#include "gui/session.h"
#include "gui/validation_chart.h"
#include "gui/validation_model.h"
#include "simulate/efficiency.h"
#include "simulate/validation.h"

using namespace dayzero;
using gui::ValidationTableModel;

namespace {
const QString kMeasurements = QStringLiteral(DAYZERO_FIXTURES_DIR "/measurements/tiny_llama.json");
const QString kCalibration = QStringLiteral(DAYZERO_FIXTURES_DIR "/measurements/tiny_llama.calibration.json");

// The report the tab must show, made here with the library alone.
simulate::ValidationReport expected(const std::string& device, const std::string& efficiency_file = "") {
  const auto m = plan::load_measurements(kMeasurements.toStdString());
  const auto catalog = topology::DeviceCatalog::load_builtin(core::data_dir());
  const auto table = efficiency_file.empty() ? simulate::EfficiencyTable::load_builtin(core::data_dir())
                                             : simulate::EfficiencyTable::load(efficiency_file);
  return simulate::validate(m, *catalog.find(device), table.for_device(device));
}
}  // namespace

class TestMeasured : public QObject {
  Q_OBJECT
  std::unique_ptr<gui::MainWindow> w_;
  gui::MeasuredView* view() const { return w_->measuredView(); }

  // Every row of the model against the report, in the report's order.
  void compareRows(const simulate::ValidationReport& want) {
    auto* m = view()->model();
    QCOMPARE(m->rowCount(), static_cast<int>(want.ops.size()));
    for (int r = 0; r < m->rowCount(); ++r) {
      const auto& o = want.ops[static_cast<size_t>(r)];
      QCOMPARE(m->index(r, ValidationTableModel::Op).data().toString(), QString::fromStdString(o.name));
      QCOMPARE(m->index(r, ValidationTableModel::Phase).data().toString(), QString::fromStdString(o.phase));
      QCOMPARE(m->index(r, ValidationTableModel::Calls).data().toLongLong(), o.calls);
      QCOMPARE(m->index(r, ValidationTableModel::MeasuredUs).data(ValidationTableModel::SortRole).toDouble(),
               o.measured_s * 1e6);
      QCOMPARE(m->index(r, ValidationTableModel::PredictedUs).data(ValidationTableModel::SortRole).toDouble(),
               o.predicted_s * 1e6);
    }
  }

  // A phase's chart: one category per kind of that phase, the sets measured and
  // predicted holding the report's totals in the chart's unit; axes titled with it.
  void compareChart(gui::ValidationChart* chart, const simulate::ValidationReport& want, const QString& phase) {
    QStringList kinds;
    std::vector<double> measured, predicted;
    for (const auto& g : want.groups)
      if (QString::fromStdString(g.phase) == phase) {
        kinds << QString::fromStdString(g.kind);
        measured.push_back(g.measured_s);
        predicted.push_back(g.predicted_s);
      }
    QVERIFY(!kinds.isEmpty());
    QCOMPARE(chart->categories(), kinds);
    QBarSeries* s = chart->series();
    QVERIFY(s);
    QCOMPARE(s->count(), 2);
    QCOMPARE(s->barSets().at(0)->label(), QString("measured"));
    QCOMPARE(s->barSets().at(1)->label(), QString("predicted"));
    const double scale = chart->unit() == "ms" ? 1e3 : 1e6;
    for (int i = 0; i < kinds.size(); ++i) {
      QCOMPARE(s->barSets().at(0)->at(i), measured[static_cast<size_t>(i)] * scale);
      QCOMPARE(s->barSets().at(1)->at(i), predicted[static_cast<size_t>(i)] * scale);
    }
    const auto y = chart->chart()->axes(Qt::Vertical);
    QCOMPARE(y.size(), 1);
    QVERIFY(y.front()->titleText().contains("(" + chart->unit() + ")"));
    QCOMPARE(chart->chart()->axes(Qt::Horizontal).front()->titleText(), QString("op kind"));
  }

 private slots:
  void initTestCase() {
    w_ = std::make_unique<gui::MainWindow>();
    w_->resize(1400, 900);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
  }

  void opensOnCpuHostAndShowsTheTab() {
    QSignalSpy changed(view(), &gui::MeasuredView::reportChanged);
    QString error;
    QVERIFY2(w_->openMeasurements(kMeasurements, &error), qPrintable(error));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(w_->tabs()->currentWidget(), view()->parentWidget());
    QCOMPARE(view()->device(), QString("cpu-host"));
    QCOMPARE(view()->deviceBox()->currentText(), QString("cpu-host"));
    QVERIFY(view()->deviceBox()->findText("H100-SXM") >= 0);
    compareRows(expected("cpu-host"));
    QVERIFY(view()->endToEndLabel()->text().contains("predicted us"));
    QVERIFY(view()->endToEndLabel()->text().contains("decode (per step, 8 steps)"));
    // The whole run re-simulated from the fixture's model config (relative to the fixture).
    QVERIFY2(view()->endToEndLabel()->text().contains("<b>Whole run</b>, re-simulated"),
             qPrintable(view()->endToEndLabel()->text()));
    QVERIFY(view()->endToEndLabel()->text().contains("decode step (TPOT)"));
  }

  void tableModelPassesTester() {
    QAbstractItemModelTester tester(view()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester proxy_tester(view()->proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    view()->model()->setReport(std::make_shared<const simulate::ValidationReport>(*view()->report()));  // a reset
    QCOMPARE(view()->model()->headerData(ValidationTableModel::MeasuredUs, Qt::Horizontal).toString(),
             QString("measured us"));
    QCOMPARE(view()->model()->headerData(ValidationTableModel::ErrorPct, Qt::Horizontal).toString(),
             QString("error %"));
  }

  void sortsNumerically() {
    auto* proxy = view()->proxy();
    view()->table()->sortByColumn(ValidationTableModel::MeasuredUs, Qt::DescendingOrder);
    QVERIFY(proxy->rowCount() > 10);
    for (int r = 1; r < proxy->rowCount(); ++r)
      QVERIFY(proxy->index(r - 1, ValidationTableModel::MeasuredUs).data(ValidationTableModel::SortRole).toDouble() >=
              proxy->index(r, ValidationTableModel::MeasuredUs).data(ValidationTableModel::SortRole).toDouble());
    view()->table()->sortByColumn(ValidationTableModel::ErrorPct, Qt::AscendingOrder);
    for (int r = 1; r < proxy->rowCount(); ++r)
      QVERIFY(proxy->index(r - 1, ValidationTableModel::ErrorPct).data(ValidationTableModel::SortRole).toDouble() <=
              proxy->index(r, ValidationTableModel::ErrorPct).data(ValidationTableModel::SortRole).toDouble());
  }

  void chartsPerPhaseAndKind() {
    const auto want = expected("cpu-host");
    compareChart(view()->prefillChart(), want, "prefill");
    compareChart(view()->decodeChart(), want, "decode");
  }

  void anotherDeviceResimulates() {
    view()->deviceBox()->setCurrentText("H100-SXM");  // as a user picks it
    QCOMPARE(view()->device(), QString("H100-SXM"));
    QCOMPARE(QString::fromStdString(view()->report()->device), QString("H100-SXM"));
    compareRows(expected("H100-SXM"));
    compareChart(view()->decodeChart(), expected("H100-SXM"), "decode");
    QString error;
    QVERIFY2(view()->setDevice("cpu-host", &error), qPrintable(error));
  }

  void calibrationFileReplacesTheFigures() {
    QString error;
    QVERIFY2(view()->setCalibration(kCalibration, &error), qPrintable(error));
    const auto want = expected("cpu-host", kCalibration.toStdString());
    QCOMPARE(view()->report()->efficiency.gemm_compute, want.efficiency.gemm_compute);
    compareRows(want);
    compareChart(view()->prefillChart(), want, "prefill");
    // Back to the shipped figures.
    QVERIFY2(view()->setCalibration(QString(), &error), qPrintable(error));
    compareRows(expected("cpu-host"));
  }

  void badFilesAreErrorsAndKeepWhatIsShown() {
    const auto rows = view()->model()->rowCount();
    QTemporaryDir dir;
    QString error;
    QVERIFY(!w_->openMeasurements(dir.filePath("missing.json"), &error));
    QVERIFY2(error.contains("missing.json"), qPrintable(error));
    const QString bad = dir.filePath("bad.json");
    std::ofstream(bad.toStdString()) << R"({"schema_version": 2, "ops": "none"})";
    QVERIFY(!w_->openMeasurements(bad, &error));
    QVERIFY2(error.contains("bad.json"), qPrintable(error));
    const QString bad_cal = dir.filePath("bad_cal.json");
    std::ofstream(bad_cal.toStdString())
        << R"({"default": {"source": "s"}, "devices": {"cpu-host": {"gemm_memory": 0, "source": "s"}}})";
    QVERIFY(!view()->setCalibration(bad_cal, &error));
    QVERIFY2(error.contains("bad_cal.json") && error.contains("gemm_memory"), qPrintable(error));
    QVERIFY(!view()->setDevice("no-such-device", &error));
    QVERIFY2(error.contains("no-such-device"), qPrintable(error));
    QCOMPARE(view()->device(), QString("cpu-host"));
    QCOMPARE(view()->deviceBox()->currentText(), QString("cpu-host"));
    QCOMPARE(view()->model()->rowCount(), rows);
    QVERIFY(view()->calibration().isEmpty());
  }

  void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestMeasured)
#include "test_measured.moc"
