#pragma once
// One phase of a ValidationReport as a bar chart: per op kind, the measured and
// the predicted time (totals over every call and rank, min_s x calls), side by side.

#include <QChartView>

#include "simulate/validation.h"

class QBarSeries;

namespace dayzero::gui {

class ValidationChart : public QChartView {
  Q_OBJECT
 public:
  explicit ValidationChart(QString phase, QWidget* parent = nullptr);
  void setReport(const simulate::ValidationReport* r);  // nullptr: empty

  // The bar series (sets "measured" and "predicted", one value per kind in
  // categories() order), and the unit its values are in: "us" or "ms".
  QBarSeries* series() const { return series_; }
  QStringList categories() const { return categories_; }
  QString unit() const { return unit_; }

 private:
  QString phase_;
  QBarSeries* series_ = nullptr;
  QStringList categories_;
  QString unit_;
};

}  // namespace dayzero::gui
