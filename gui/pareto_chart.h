#pragma once
// The Pareto scatter: throughput per device (tokens/s/device) against TPOT (ms).
// Feasible plans (fit and meet the SLA) in one series, the front in another, the
// selected plan highlighted in a third. Clicking a point emits planClicked with
// its index into SearchResult::all.

#include <QChartView>
#include <QScatterSeries>
#include <memory>
#include <optional>
#include <vector>

#include "search/search.h"

namespace dayzero::gui {

class ParetoChart : public QChartView {
  Q_OBJECT
 public:
  // At most this many feasible plans are drawn (evenly thinned); the front always is.
  static constexpr size_t kMaxPoints = 3000;

  explicit ParetoChart(QWidget* parent = nullptr);
  void setResult(std::shared_ptr<const search::SearchResult> result);
  void highlight(std::optional<size_t> plan);
  std::optional<size_t> highlighted() const { return highlighted_; }
  static QPointF pointOf(const search::Evaluated& e);  // (TPOT ms, tokens/s/device)

  QScatterSeries* feasibleSeries() const { return feasible_; }
  QScatterSeries* frontSeries() const { return front_; }
  QScatterSeries* selectedSeries() const { return selected_; }

 signals:
  void planClicked(qulonglong plan);

 private:
  void clicked(const QPointF& p);
  std::shared_ptr<const search::SearchResult> result_;
  QScatterSeries* feasible_;
  QScatterSeries* front_;
  QScatterSeries* selected_;
  std::vector<size_t> feasible_plans_, front_plans_;
  std::optional<size_t> highlighted_;
};

}  // namespace dayzero::gui
