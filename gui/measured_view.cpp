#include "gui/measured_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

#include "core/data_dir.h"
#include "gui/session.h"
#include "gui/validation_chart.h"
#include "gui/validation_model.h"

namespace dayzero::gui {

namespace {

QString us(double s) { return QString::number(s * 1e6, 'f', s < 1e-4 ? 2 : 1); }
QString pct(double p) {
  if (!std::isfinite(p)) return QStringLiteral("-");
  if (std::abs(p) < 0.05) return QStringLiteral("0.0");
  return (p > 0 ? "+" : "") + QString::number(p, 'f', 1);
}
QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

MeasuredView::MeasuredView(QWidget* parent)
    : QWidget(parent),
      model_(new ValidationTableModel(this)),
      proxy_(new ValidationSortProxy(this)),
      table_(new QTableView),
      prefill_chart_(new ValidationChart(tr("prefill"))),
      decode_chart_(new ValidationChart(tr("decode"))),
      device_(new QComboBox),
      calibration_label_(new QLabel(tr("shipped figures"))),
      browse_calibration_(new QPushButton(tr("Calibration file..."))),
      shipped_(new QPushButton(tr("Shipped figures"))),
      summary_(new QLabel),
      end_to_end_(new QLabel) {
  proxy_->setSourceModel(model_);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  try {
    for (const auto& d : topology::DeviceCatalog::load_builtin(core::data_dir()).names()) device_->addItem(q(d));
  } catch (const std::exception& e) {
    summary_->setText(q(e.what()));
  }
  device_->setCurrentText(kDefaultMeasuredDevice);
  shown_device_ = device_->currentText();
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setText(tr("Open a Measurements file written by `dayzero run` (File > Open measurements)."));
  end_to_end_->setTextFormat(Qt::RichText);
  end_to_end_->setWordWrap(true);  // the whole-run line is long: never widen the window
  calibration_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Device:")));
  controls->addWidget(device_);
  controls->addSpacing(16);
  controls->addWidget(new QLabel(tr("Efficiency:")));
  controls->addWidget(calibration_label_, 1);
  controls->addWidget(browse_calibration_);
  controls->addWidget(shipped_);

  auto* charts = new QSplitter(Qt::Vertical);
  charts->addWidget(prefill_chart_);
  charts->addWidget(decode_chart_);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(table_);
  split->addWidget(charts);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({940, 660});

  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->addLayout(controls);
  v->addWidget(summary_);
  v->addWidget(end_to_end_);
  v->addWidget(split, 1);

  connect(device_, &QComboBox::currentTextChanged, this, [this](const QString& d) {
    QString error;
    if (run_ && !setDevice(d, &error)) warn(error);
  });
  connect(browse_calibration_, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Calibration from dayzero calibrate"), QString(),
                                                   tr("Efficiency table (*.json)"));
    QString error;
    if (!f.isEmpty() && !setCalibration(f, &error)) warn(error);
  });
  connect(shipped_, &QPushButton::clicked, this, [this] {
    QString error;
    if (!setCalibration(QString(), &error)) warn(error);
  });
}

MeasuredView::~MeasuredView() = default;

QString MeasuredView::device() const { return shown_device_; }

void MeasuredView::warn(const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Predicted vs measured"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // not exec(): the window and the tests go on
  emit failed(message);
}

bool MeasuredView::open(const QString& measurements_file, QString* error) {
  try {
    return refresh(std::make_unique<MeasuredRun>(load_measured(measurements_file.toStdString())), shown_device_,
                   calibration_, error);
  } catch (const std::exception& e) {
    if (error) *error = q(e.what());
    return false;
  }
}

bool MeasuredView::setDevice(const QString& device, QString* error) {
  if (!run_) {
    if (error) *error = tr("No measurements are open.");
    return false;
  }
  return refresh(nullptr, device, calibration_, error);
}

bool MeasuredView::setCalibration(const QString& calibration_file, QString* error) {
  if (!run_) {
    if (error) *error = tr("No measurements are open.");
    return false;
  }
  return refresh(nullptr, shown_device_, calibration_file, error);
}

bool MeasuredView::refresh(std::unique_ptr<MeasuredRun> run, const QString& device, const QString& calibration,
                           QString* error) {
  const MeasuredRun& r = run ? *run : *run_;
  MeasuredReport rep;
  try {
    rep = validate_run(r, device.toStdString(), calibration.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = q(e.what());
    const QSignalBlocker block(device_);
    device_->setCurrentText(shown_device_);  // back to what is shown
    return false;
  }
  if (run) run_ = std::move(run);
  calibration_ = calibration;
  shown_device_ = device;
  {
    const QSignalBlocker block(device_);
    device_->setCurrentText(device);
  }
  show(rep);
  return true;
}

void MeasuredView::show(const MeasuredReport& rep) {
  report_ = std::make_shared<const simulate::ValidationReport>(rep.report);
  const auto& r = *report_;
  const auto& m = run_->measurements;
  const auto& e = r.efficiency;
  calibration_label_->setText(calibration_.isEmpty() ? tr("shipped figures (scenarios/devices/efficiency.json)")
                                                     : calibration_);
  calibration_label_->setToolTip(q(rep.efficiency_source));
  summary_->setText(tr("%1: %2, %3 rank(s) on %4, %5 timed ops. Re-costed on %6 (%7): GEMM %8 compute / %9 memory, "
                       "attention %10 / %11, element-wise %12, %13 us per call.")
                        .arg(q(run_->file.string()), q(m.model))
                        .arg(m.world_size)
                        .arg(q(m.machine.cpu_model.empty() ? std::string("an unnamed CPU") : m.machine.cpu_model))
                        .arg(r.ops.size())
                        .arg(q(r.device), q(std::string(topology::compute_dtype_name(r.compute_dtype))))
                        .arg(e.gemm_compute, 0, 'f', 3)
                        .arg(e.gemm_memory, 0, 'f', 3)
                        .arg(e.attention_compute, 0, 'f', 3)
                        .arg(e.attention_memory, 0, 'f', 3)
                        .arg(e.elementwise_memory, 0, 'f', 3)
                        .arg(e.kernel_overhead_s * 1e6, 0, 'f', 3));
  QString html = tr("<b>End to end</b>, one step of the slowest rank (predicted: the sum of its ops' predictions; the "
                    "measured step also holds what no op timing covers; collectives not predicted, measured %1 us)"
                    "<table cellspacing='0' cellpadding='3'><tr><th align='left'>phase</th><th align='right'>measured "
                    "step us</th><th align='right'>measured ops us</th><th align='right'>predicted us</th>"
                    "<th align='right'>error %</th></tr>")
                     .arg(us(r.collectives_s));
  for (const auto* p : {&r.prefill, &r.decode}) {
    const QString label = p->phase == "decode" ? tr("decode (per step, %1 steps)").arg(p->steps) : tr("prefill");
    if (!p->measured) {
      html += tr("<tr><td>%1</td><td colspan='4'>not run</td></tr>").arg(label);
      continue;
    }
    html += QString(
                "<tr><td>%1</td><td align='right'>%2</td><td align='right'>%3</td><td align='right'>%4</td>"
                "<td align='right'>%5</td></tr>")
                .arg(label, us(p->measured_s), us(p->measured_ops_s), us(p->predicted_s), pct(p->error_pct));
  }
  html += "</table>";
  // The whole run as the simulator predicts it (validate's last section).
  if (rep.whole_run) {
    const auto& w = *rep.whole_run;
    html +=
        tr("<b>Whole run</b>, re-simulated (its plan and workload on %1 x %2 in one node: collectives, pipeline and "
           "overheads included): prefill (%3 x TTFT per replica) %4 ms predicted against %5 ms measured (%6 %); "
           "decode step (TPOT) %7 ms against %8 ms (%9 %)")
            .arg(m.world_size)
            .arg(q(r.device))
            .arg(w.prompts_per_replica)
            .arg(w.predicted_prefill_s * 1e3, 0, 'f', 3)
            .arg(w.measured_prefill_s * 1e3, 0, 'f', 3)
            .arg(pct(w.prefill_error_pct))
            .arg(w.predicted_decode_step_s * 1e3, 0, 'f', 3)
            .arg(w.measured_decode_step_s * 1e3, 0, 'f', 3)
            .arg(pct(w.decode_error_pct));
  } else {
    html += tr("<b>Whole run</b>: not re-simulated: %1").arg(q(rep.whole_run_skipped));
  }
  end_to_end_->setText(html);
  model_->setReport(report_);
  table_->resizeColumnsToContents();
  prefill_chart_->setReport(report_.get());
  decode_chart_->setReport(report_.get());
  emit reportChanged();
}

}  // namespace dayzero::gui
