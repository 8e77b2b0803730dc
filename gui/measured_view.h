#pragma once
// The "Predicted vs measured" tab: a Measurements file (File > Open measurements,
// or --measurements) re-costed on a catalog device (default cpu-host) with the
// shipped efficiency figures or a calibration file: the ops table (sortable),
// prefill and decode end to end, and per phase a bar chart of measured against
// predicted time by op kind. Presentation only: the report is simulate::validate's.

#include <QWidget>
#include <memory>

#include "gui/measured_run.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace dayzero::gui {

class ValidationChart;
class ValidationSortProxy;
class ValidationTableModel;

class MeasuredView : public QWidget {
  Q_OBJECT
 public:
  explicit MeasuredView(QWidget* parent = nullptr);
  ~MeasuredView() override;

  // Each returns false with the loader's message (file, field, value) in `error`
  // and leaves what was shown before.
  bool open(const QString& measurements_file, QString* error = nullptr);
  bool setDevice(const QString& device, QString* error = nullptr);
  bool setCalibration(const QString& calibration_file, QString* error = nullptr);  // empty: the shipped figures

  const simulate::ValidationReport* report() const { return report_.get(); }
  QString device() const;
  QString calibration() const { return calibration_; }

  ValidationTableModel* model() const { return model_; }
  ValidationSortProxy* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  ValidationChart* prefillChart() const { return prefill_chart_; }
  ValidationChart* decodeChart() const { return decode_chart_; }
  QComboBox* deviceBox() const { return device_; }
  QLabel* summaryLabel() const { return summary_; }
  QLabel* endToEndLabel() const { return end_to_end_; }

 signals:
  void reportChanged();
  void failed(const QString& message);

 private:
  bool refresh(std::unique_ptr<MeasuredRun> run, const QString& device, const QString& calibration, QString* error);
  void show(const MeasuredReport& r);
  void warn(const QString& message);

  std::unique_ptr<MeasuredRun> run_;
  std::shared_ptr<const simulate::ValidationReport> report_;
  QString calibration_;
  QString shown_device_;
  ValidationTableModel* model_;
  ValidationSortProxy* proxy_;
  QTableView* table_;
  ValidationChart* prefill_chart_;
  ValidationChart* decode_chart_;
  QComboBox* device_;
  QLabel* calibration_label_;
  QPushButton* browse_calibration_;
  QPushButton* shipped_;
  QLabel* summary_;
  QLabel* end_to_end_;
};

}  // namespace dayzero::gui
