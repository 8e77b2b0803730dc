#pragma once
// The right-hand side: the selected plan's what-if knobs (device count, batch,
// input length, weight and KV dtypes), its headline figures, memory and step-time charts and
// the cluster drawing. A knob change re-simulates the plan at once (on the GUI
// thread: Simulator::simulate takes microseconds).

#include <QWidget>
#include <memory>
#include <optional>

#include "gui/session.h"
#include "simulate/simulator.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace dayzero::gui {

class ClusterView;
class MemoryChart;
class StepTimeChart;

class PlanDetails : public QWidget {
  Q_OBJECT
 public:
  explicit PlanDetails(QWidget* parent = nullptr);
  ~PlanDetails() override;

  void setSession(std::shared_ptr<const Session> session);
  void setPlan(const search::Evaluated* e);  // nullptr: nothing selected

  // The plan as shown (knobs applied) and its prediction; empty when none or invalid.
  const std::optional<plan::Plan>& plan() const { return plan_; }
  const std::optional<simulate::Prediction>& prediction() const { return prediction_; }

  QString error() const { return error_; }  // why the what-if plan is not valid; empty when it is
  QLabel* summaryLabel() const { return summary_; }
  QSpinBox* devicesBox() const { return devices_; }
  QSpinBox* batchBox() const { return batch_; }
  QSpinBox* inputLenBox() const { return input_len_; }
  QComboBox* weightsBox() const { return weights_; }
  QComboBox* kvBox() const { return kv_; }
  ClusterView* clusterView() const { return cluster_; }

 signals:
  void resimulated();

 private:
  void resimulate();
  void showSummary();
  std::shared_ptr<const Session> session_;
  std::unique_ptr<simulate::Simulator> sim_;
  std::optional<search::Evaluated> base_;
  std::optional<plan::Plan> plan_;
  std::optional<simulate::Prediction> prediction_;
  QString error_;
  QSpinBox* devices_;
  QSpinBox* batch_;
  QSpinBox* input_len_;
  QComboBox* weights_;
  QComboBox* kv_;
  QLabel* summary_;
  MemoryChart* memory_;
  StepTimeChart* prefill_;
  StepTimeChart* decode_;
  ClusterView* cluster_;
  QComboBox* colouring_;
};

}  // namespace dayzero::gui
