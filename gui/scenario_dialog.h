#pragma once
// File > New scenario...: pick a model (bundled, or any config.json or model
// directory), a cluster (bundled, then edit nodes, devices per node, device type
// and NICs), a workload, an SLA and the objective. OK hands the ScenarioSpec to
// the window's submit function (which writes and checks the files); an error
// shows in a message box and the dialog stays open.

#include <QDialog>
#include <functional>
#include <optional>

#include "gui/scenario_builder.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QMessageBox;
class QSpinBox;

namespace dayzero::gui {

class ScenarioDialog : public QDialog {
  Q_OBJECT
 public:
  using Submit = std::function<bool(const ScenarioSpec&, QString* error)>;
  explicit ScenarioDialog(const std::filesystem::path& data_dir, QWidget* parent = nullptr);

  void setSubmit(Submit submit) { submit_ = std::move(submit); }
  ScenarioSpec spec() const;
  // Adds a model (config.json or directory) to the combo and selects it.
  void addModelPath(const QString& path);
  QString lastError() const { return last_error_; }

  QComboBox* modelBox() const { return model_; }
  QComboBox* clusterBox() const { return cluster_; }
  QSpinBox* nodesBox() const { return nodes_; }
  QSpinBox* devicesPerNodeBox() const { return per_node_; }
  QComboBox* deviceBox() const { return device_; }
  QSpinBox* nicsBox() const { return nics_; }
  QDoubleSpinBox* nicBandwidthBox() const { return nic_bw_; }
  QSpinBox* inputLenBox() const { return input_len_; }
  QSpinBox* outputLenBox() const { return output_len_; }
  QSpinBox* concurrencyBox() const { return concurrency_; }
  QDoubleSpinBox* prefixHitBox() const { return prefix_hit_; }
  QDoubleSpinBox* zipfBox() const { return zipf_; }
  QDoubleSpinBox* maxTtftBox() const { return max_ttft_; }
  QDoubleSpinBox* maxTpotBox() const { return max_tpot_; }
  QComboBox* objectiveBox() const { return objective_; }

 public slots:
  void accept() override;

 private:
  void clusterChosen();
  void updateClusterSummary();
  void showError(const QString& message);

  std::filesystem::path data_dir_;
  Submit submit_;
  std::optional<topology::ClusterConfig> base_;  // the chosen cluster as its file has it
  QString last_error_;
  QMessageBox* error_box_ = nullptr;
  QLineEdit* name_;
  QComboBox* model_;
  QComboBox* cluster_;
  QSpinBox* nodes_;
  QSpinBox* per_node_;
  QComboBox* device_;
  QSpinBox* nics_;
  QDoubleSpinBox* nic_bw_;
  QLabel* cluster_summary_;
  QSpinBox* input_len_;
  QSpinBox* output_len_;
  QSpinBox* concurrency_;
  QDoubleSpinBox* prefix_hit_;
  QDoubleSpinBox* zipf_;
  QDoubleSpinBox* max_ttft_;
  QDoubleSpinBox* max_tpot_;
  QComboBox* objective_;
};

}  // namespace dayzero::gui
