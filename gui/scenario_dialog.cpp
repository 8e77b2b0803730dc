#include "gui/scenario_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "topology/device.h"

namespace dayzero::gui {

namespace {

QSpinBox* spin(int lo, int hi, int value, const QString& suffix = {}) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setValue(value);
  s->setSuffix(suffix);
  return s;
}

QDoubleSpinBox* dspin(double lo, double hi, double value, int decimals, const QString& suffix = {},
                      const QString& zero_text = {}) {
  auto* s = new QDoubleSpinBox;
  s->setRange(lo, hi);
  s->setDecimals(decimals);
  s->setSingleStep(hi >= 100 ? 1.0 : 0.05);
  s->setValue(value);
  s->setSuffix(suffix);
  if (!zero_text.isEmpty()) s->setSpecialValueText(zero_text);  // shown at the minimum (0)
  return s;
}

}  // namespace

ScenarioDialog::ScenarioDialog(const std::filesystem::path& data_dir, QWidget* parent)
    : QDialog(parent),
      data_dir_(data_dir),
      name_(new QLineEdit("built")),
      model_(new QComboBox),
      cluster_(new QComboBox),
      nodes_(spin(1, 4096, 1)),
      per_node_(spin(1, 72, 1)),
      device_(new QComboBox),
      nics_(spin(1, 64, 1)),
      nic_bw_(dspin(0.1, 1000, 50, 1, tr(" GB/s"))),
      cluster_summary_(new QLabel),
      input_len_(spin(1, 1 << 22, 1024, tr(" tokens"))),
      output_len_(spin(1, 1 << 22, 256, tr(" tokens"))),
      concurrency_(spin(1, 1 << 20, 64, tr(" seqs"))),
      prefix_hit_(dspin(0, 0.99, 0, 2)),
      zipf_(dspin(0, 5, 0, 2)),
      max_ttft_(dspin(0, 3600, 0, 2, tr(" s"), tr("none"))),
      max_tpot_(dspin(0, 100000, 0, 1, tr(" ms"), tr("none"))),
      objective_(new QComboBox) {
  setWindowTitle(tr("New scenario"));
  for (const auto& m : shipped_models(data_dir_))
    model_->addItem(QString::fromStdString(m.name), QString::fromStdString(m.path.string()));
  for (const auto& c : shipped_clusters(data_dir_))
    cluster_->addItem(QString::fromStdString(c.name), QString::fromStdString(c.path.string()));
  try {
    for (const auto& d : topology::DeviceCatalog::load_builtin(data_dir_).names())
      device_->addItem(QString::fromStdString(d));
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());  // the combo stays empty; the cluster keeps its device
  }
  objective_->addItems({"throughput_per_device", "latency", "fewest_devices"});

  auto* browse_file = new QPushButton(tr("config.json..."));
  auto* browse_dir = new QPushButton(tr("Directory..."));
  auto* model_row = new QHBoxLayout;
  model_row->addWidget(model_, 1);
  model_row->addWidget(browse_file);
  model_row->addWidget(browse_dir);

  auto* cluster_box = new QGroupBox(tr("Cluster"));
  auto* cf = new QFormLayout(cluster_box);
  cf->addRow(tr("Start from"), cluster_);
  cf->addRow(tr("Nodes"), nodes_);
  cf->addRow(tr("Devices per node"), per_node_);
  cf->addRow(tr("Device"), device_);
  cf->addRow(tr("NICs per node"), nics_);
  cf->addRow(tr("NIC bandwidth"), nic_bw_);
  cf->addRow(cluster_summary_);
  nic_bw_->setToolTip(tr("Per NIC, per direction (400 Gb/s = 50 GB/s)"));

  auto* work_box = new QGroupBox(tr("Workload and SLA"));
  auto* wf = new QFormLayout(work_box);
  wf->addRow(tr("Input length"), input_len_);
  wf->addRow(tr("Output length"), output_len_);
  wf->addRow(tr("Concurrency"), concurrency_);
  wf->addRow(tr("Prefix cache hit rate"), prefix_hit_);
  wf->addRow(tr("Expert routing Zipf s"), zipf_);
  wf->addRow(tr("Max TTFT"), max_ttft_);
  wf->addRow(tr("Max TPOT"), max_tpot_);
  wf->addRow(tr("Objective"), objective_);

  auto* top = new QFormLayout;
  top->addRow(tr("Name"), name_);
  top->addRow(tr("Model"), model_row);
  auto* boxes = new QHBoxLayout;
  boxes->addWidget(cluster_box);
  boxes->addWidget(work_box);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Run search"));
  auto* v = new QVBoxLayout(this);
  v->addLayout(top);
  v->addLayout(boxes);
  v->addWidget(buttons);

  connect(buttons, &QDialogButtonBox::accepted, this, &ScenarioDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(browse_file, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Model config"), {}, tr("config.json (*.json)"));
    if (!f.isEmpty()) addModelPath(f);
  });
  connect(browse_dir, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Model directory"));
    if (!d.isEmpty()) addModelPath(d);
  });
  connect(cluster_, &QComboBox::currentIndexChanged, this, &ScenarioDialog::clusterChosen);
  for (QSpinBox* s : {nodes_, per_node_, nics_})
    connect(s, &QSpinBox::valueChanged, this, &ScenarioDialog::updateClusterSummary);
  connect(device_, &QComboBox::currentIndexChanged, this, &ScenarioDialog::updateClusterSummary);
  connect(nic_bw_, &QDoubleSpinBox::valueChanged, this, &ScenarioDialog::updateClusterSummary);

  if (const int q = model_->findText("Qwen3-30B-A3B"); q >= 0) model_->setCurrentIndex(q);
  if (const int h = cluster_->findText("h100x8"); h >= 0) cluster_->setCurrentIndex(h);
  clusterChosen();
}

void ScenarioDialog::addModelPath(const QString& path) {
  int i = model_->findData(path);
  if (i < 0) {
    model_->addItem(path, path);
    i = model_->count() - 1;
  }
  model_->setCurrentIndex(i);
}

void ScenarioDialog::clusterChosen() {
  base_.reset();
  try {
    base_ = topology::load_cluster_config(cluster_->currentData().toString().toStdString());
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
  }
  if (base_) {
    const ClusterEdit e = edit_of(*base_);
    const QSignalBlocker b1(nodes_), b2(per_node_), b3(device_), b4(nics_), b5(nic_bw_);
    nodes_->setValue(e.nodes);
    per_node_->setValue(e.devices_per_node);
    device_->setCurrentText(QString::fromStdString(e.device));
    nics_->setValue(std::max(e.nics_per_node, 1));
    nic_bw_->setValue(e.nic_bw_Bps > 0 ? e.nic_bw_Bps / 1e9 : 50.0);
  }
  updateClusterSummary();
}

void ScenarioDialog::updateClusterSummary() {
  // NICs only matter with a network between nodes (one is added when a 1-node cluster gets more nodes).
  const bool network = base_ && (has_network(*base_) || nodes_->value() > 1);
  nics_->setEnabled(network);
  nic_bw_->setEnabled(network);
  const ScenarioSpec s = spec();
  cluster_summary_->setText(tr("%1 devices in all%2")
                                .arg(nodes_->value() * per_node_->value())
                                .arg(s.cluster_edit ? tr(" (edited: written as a new cluster file)") : QString()));
}

ScenarioSpec ScenarioDialog::spec() const {
  ScenarioSpec s;
  s.name = name_->text().trimmed().isEmpty() ? "built" : name_->text().trimmed().toStdString();
  s.model = model_->currentData().toString().toStdString();
  s.cluster = cluster_->currentData().toString().toStdString();
  if (base_) {
    const ClusterEdit as_is = edit_of(*base_);
    ClusterEdit e{nodes_->value(), per_node_->value(),
                  device_->currentText().isEmpty() ? as_is.device : device_->currentText().toStdString(),
                  nics_->isEnabled() ? nics_->value() : as_is.nics_per_node,
                  nics_->isEnabled() ? nic_bw_->value() * 1e9 : as_is.nic_bw_Bps};
    const bool same = e.nodes == as_is.nodes && e.devices_per_node == as_is.devices_per_node &&
                      e.device == as_is.device && e.nics_per_node == as_is.nics_per_node &&
                      std::abs(e.nic_bw_Bps - as_is.nic_bw_Bps) < 1e6;
    if (!same) s.cluster_edit = e;
  }
  s.input_len = input_len_->value();
  s.output_len = output_len_->value();
  s.concurrency = concurrency_->value();
  s.prefix_hit_rate = prefix_hit_->value();
  s.routing_zipf_s = zipf_->value();
  s.max_ttft_s = max_ttft_->value();
  s.max_tpot_ms = max_tpot_->value();
  s.objective = objective_->currentText().toStdString();
  return s;
}

void ScenarioDialog::accept() {
  QString error;
  if (submit_ && !submit_(spec(), &error)) {
    showError(error);
    return;  // stays open with the entries
  }
  last_error_.clear();
  QDialog::accept();
}

void ScenarioDialog::showError(const QString& message) {
  last_error_ = message;
  if (!error_box_) {
    error_box_ = new QMessageBox(QMessageBox::Warning, tr("New scenario"), {}, QMessageBox::Ok, this);
    error_box_->setWindowModality(Qt::WindowModal);
  }
  error_box_->setText(message);
  error_box_->open();  // does not block (tests drive the dialog too)
}

}  // namespace dayzero::gui
