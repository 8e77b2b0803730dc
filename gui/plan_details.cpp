#include "gui/plan_details.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "gui/cluster_view.h"
#include "gui/plan_charts.h"
#include "plan/plan_json.h"
#include "simulate/precisions.h"

namespace dayzero::gui {

PlanDetails::PlanDetails(QWidget* parent)
    : QWidget(parent),
      devices_(new QSpinBox),
      batch_(new QSpinBox),
      input_len_(new QSpinBox),
      weights_(new QComboBox),
      kv_(new QComboBox),
      summary_(new QLabel),
      memory_(new MemoryChart),
      prefill_(new StepTimeChart(tr("Prefill step (TTFT)"))),
      decode_(new StepTimeChart(tr("Decode step (TPOT)"))),
      cluster_(new ClusterView),
      colouring_(new QComboBox) {
  devices_->setRange(1, 1);
  devices_->setToolTip(tr("Devices the plan runs on: TP and PP kept, data-parallel replicas (and EP) scaled"));
  batch_->setRange(1, 1 << 20);
  batch_->setSuffix(tr(" seqs"));
  input_len_->setRange(1, 1 << 22);
  input_len_->setSuffix(tr(" tokens"));
  for (const auto& w : weight_choices()) weights_->addItem(QString::fromStdString(w));
  for (const auto& k : kv_choices()) kv_->addItem(QString::fromStdString(k));
  colouring_->addItems({tr("TP groups"), tr("EP groups"), tr("PP stages")});
  auto* reset = new QPushButton(tr("Reset"));
  reset->setToolTip(tr("Back to the plan as the search found it"));

  auto* knobs = new QGroupBox(tr("What-if: re-simulate the selected plan"));
  auto* row = new QHBoxLayout(knobs);
  auto add = [row](const QString& label, QWidget* w) {
    row->addWidget(new QLabel(label));
    row->addWidget(w);
  };
  add(tr("devices"), devices_);
  add(tr("batch"), batch_);
  add(tr("input"), input_len_);
  add(tr("weights"), weights_);
  add(tr("KV cache"), kv_);
  row->addWidget(reset);
  row->addStretch();

  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setMinimumHeight(summary_->fontMetrics().lineSpacing() * 3 + 4);
  summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);

  auto* cluster_box = new QWidget;
  auto* cl = new QVBoxLayout(cluster_box);
  cl->setContentsMargins(0, 0, 0, 0);
  auto* cl_row = new QHBoxLayout;
  cl_row->addWidget(new QLabel(tr("<b>Cluster</b>, devices coloured by")));
  cl_row->addWidget(colouring_);
  cl_row->addStretch();
  cl->addLayout(cl_row);
  cl->addWidget(cluster_);

  auto* grid = new QGridLayout;
  grid->addWidget(memory_, 0, 0);
  grid->addWidget(cluster_box, 0, 1);
  grid->addWidget(prefill_, 1, 0);
  grid->addWidget(decode_, 1, 1);
  grid->setColumnStretch(0, 3);
  grid->setColumnStretch(1, 2);
  grid->setRowStretch(0, 1);
  grid->setRowStretch(1, 1);

  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(knobs);
  v->addWidget(summary_);
  v->addLayout(grid, 1);

  connect(devices_, &QSpinBox::valueChanged, this, &PlanDetails::resimulate);
  connect(batch_, &QSpinBox::valueChanged, this, &PlanDetails::resimulate);
  connect(input_len_, &QSpinBox::valueChanged, this, &PlanDetails::resimulate);
  connect(weights_, &QComboBox::currentIndexChanged, this, &PlanDetails::resimulate);
  connect(kv_, &QComboBox::currentIndexChanged, this, &PlanDetails::resimulate);
  connect(reset, &QPushButton::clicked, this, [this] {
    if (!base_) return;
    const search::Evaluated e = *base_;
    setPlan(&e);
  });
  connect(colouring_, &QComboBox::currentIndexChanged, this,
          [this](int i) { cluster_->setColouring(static_cast<ClusterView::Colouring>(i)); });
  setPlan(nullptr);
}

PlanDetails::~PlanDetails() = default;

void PlanDetails::setSession(std::shared_ptr<const Session> session) {
  base_.reset();
  sim_.reset();
  session_ = std::move(session);
  if (session_) sim_ = std::make_unique<simulate::Simulator>(session_->model, session_->cluster, session_->efficiency);
  cluster_->setCluster(session_ ? &session_->cluster : nullptr);
  {
    const QSignalBlocker b(devices_);
    devices_->setRange(1, session_ ? static_cast<int>(session_->cluster.num_devices()) : 1);
  }
  setPlan(nullptr);
}

void PlanDetails::setPlan(const search::Evaluated* e) {
  if (e) base_ = *e;
  else base_.reset();
  {
    const QSignalBlocker b0(devices_), b1(batch_), b2(input_len_), b3(weights_), b4(kv_);
    if (base_) {
      const Knobs k = knobs_of(*base_);
      devices_->setValue(k.devices);
      batch_->setValue(static_cast<int>(k.batch));
      input_len_->setValue(static_cast<int>(k.input_len));
      weights_->setCurrentText(QString::fromStdString(std::string(search::weight_choice_name(k.weights))));
      kv_->setCurrentText(QString::fromStdString(std::string(plan::kv_dtype_name(k.kv_cache))));
    }
  }
  for (QWidget* w : std::initializer_list<QWidget*>{devices_, batch_, input_len_, weights_, kv_})
    w->setEnabled(base_.has_value());
  resimulate();
}

void PlanDetails::resimulate() {
  plan_.reset();
  prediction_.reset();
  error_.clear();
  if (base_ && sim_) {
    // The combos hold exactly the names of search::kAllWeightChoices and plan::kAllKvDtypes.
    const Knobs k{batch_->value(), input_len_->value(),
                  search::parse_weight_choice(weights_->currentText().toStdString()).value(),
                  plan::parse_kv_dtype(kv_->currentText().toStdString()).value(), devices_->value()};
    try {
      plan::Plan p = apply_knobs(base_->plan, k);
      plan::validate_plan(p, session_->model, session_->cluster.num_devices(), "what-if");
      simulate::validate_plan_precisions(p, session_->cluster.device_spec(), "what-if");
      prediction_ = sim_->simulate(p);
      plan_ = std::move(p);
    } catch (const std::exception& ex) {
      error_ = QString::fromStdString(ex.what());
    }
  }
  const simulate::Prediction* d = prediction_ ? &*prediction_ : nullptr;
  memory_->setPrediction(d);
  prefill_->setStep(d && d->fits ? &d->prefill : nullptr);
  decode_->setStep(d && d->fits ? &d->decode : nullptr);
  cluster_->setPlan(plan_ ? &*plan_ : nullptr);
  showSummary();
  emit resimulated();
}

void PlanDetails::showSummary() {
  if (!base_) {
    summary_->setText(tr("Select a plan in the table or on the chart."));
    return;
  }
  if (!error_.isEmpty()) {
    summary_->setText(tr("<b>Not a valid plan:</b> %1").arg(error_.toHtmlEscaped()));
    return;
  }
  const auto& p = *plan_;
  const auto& d = *prediction_;
  const auto& full = d.ranks[static_cast<size_t>(d.fullest_rank)];
  QString head =
      tr("<b>%1</b>%4, batch %2, input %3 tokens")
          .arg(QString::fromStdString(search::layout_name(*base_)).toHtmlEscaped())
          .arg(p.workload.batch)
          .arg(p.workload.input_len)
          .arg(p.world_size() == base_->plan.world_size()
                   ? QString()
                   : tr(" → %1 devices (dp %2, ep %3)").arg(p.world_size()).arg(p.attention.dp).arg(p.moe.ep));
  QString fig = d.fits ? tr("TTFT %1 s · TPOT %2 ms · %3 tok/s · %4 tok/s/device")
                             .arg(d.ttft_s, 0, 'f', 3)
                             .arg(d.tpot_s * 1e3, 0, 'f', 1)
                             .arg(d.throughput_tokens_per_s, 0, 'f', 0)
                             .arg(d.throughput_tokens_per_s_per_device, 0, 'f', 1)
                       : tr("<span style='color:#c00'><b>does not fit</b></span>");
  QString mem = tr("fullest rank %1: %2 of %3 GB — %4")
                    .arg(full.rank)
                    .arg(static_cast<double>(full.total_bytes) / 1e9, 0, 'f', 1)
                    .arg(static_cast<double>(full.capacity_bytes) / 1e9, 0, 'f', 1)
                    .arg(QString::fromStdString(d.fullest_reason).toHtmlEscaped());
  summary_->setText(head + "<br>" + fig + "<br>" + mem);
}

}  // namespace dayzero::gui
