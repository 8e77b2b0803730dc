#pragma once
// Charts of one simulated plan: memory per rank by kind against capacity (GB),
// and a step's time by op kind (ms).

#include <QChartView>

#include "simulate/prediction.h"

namespace dayzero::gui {

// At most this many ranks get a bar: the fullest rank of each stage first, then
// others in rank order; the title says how many of how many.
inline constexpr int kMaxMemoryBars = 16;

class MemoryChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void setPrediction(const simulate::Prediction* p);  // nullptr: empty
};

class StepTimeChart : public QChartView {
  Q_OBJECT
 public:
  StepTimeChart(QString title, QWidget* parent = nullptr);
  void setStep(const simulate::StepTime* s);  // nullptr: empty

 private:
  QString title_;
};

}  // namespace dayzero::gui
