#pragma once
// Latency curves of a sweep (serve/sweep.h): TTFT, TPOT (mean and p90, with the SLA's
// limit as a dashed line) and output throughput (the whole deployment's and per
// device) against the sweep's axis, three charts side by side. `dayzero sweep --out`
// draws its PNG with it (dayzero-gui --render-sweep), and the GUI's Curves tab shows
// it for the selected plan.

#include <QWidget>

#include "serve/sweep.h"

class QChart;
class QChartView;
class QLabel;

namespace dayzero::gui {

class SweepChart : public QWidget {
  Q_OBJECT
 public:
  explicit SweepChart(QWidget* parent = nullptr);
  void setSweep(const serve::Sweep& s);  // an empty sweep clears the charts
  void setMessage(const QString& text);  // shown above the charts (progress, errors)

  QChart* ttftChart() const;
  QChart* tpotChart() const;
  QChart* throughputChart() const;

 private:
  QLabel* message_;
  QChartView* ttft_;
  QChartView* tpot_;
  QChartView* throughput_;
};

// Draws `s` at width x height pixels into a PNG file; false (and *error) when it
// cannot be written. Needs a QApplication (the offscreen platform will do).
bool render_sweep_png(const serve::Sweep& s, const QString& path, int width, int height, QString* error);

}  // namespace dayzero::gui
