#include "gui/pareto_chart.h"

#include <QChart>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

namespace dayzero::gui {

ParetoChart::ParetoChart(QWidget* parent)
    : QChartView(new QChart, parent),
      feasible_(new QScatterSeries),
      front_(new QScatterSeries),
      selected_(new QScatterSeries) {
  setRenderHint(QPainter::Antialiasing);
  QChart* c = chart();
  c->setTitle(tr("Pareto front: throughput per device against TPOT"));
  c->setMargins(QMargins(4, 4, 4, 4));
  feasible_->setName(tr("feasible plans"));
  feasible_->setMarkerSize(6);
  feasible_->setColor(QColor(120, 160, 210));
  feasible_->setBorderColor(Qt::transparent);
  front_->setName(tr("Pareto front"));
  front_->setMarkerSize(10);
  front_->setColor(QColor(230, 120, 20));
  selected_->setName(tr("selected plan"));
  selected_->setMarkerSize(18);
  selected_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  selected_->setColor(QColor(220, 20, 40));
  selected_->setBorderColor(Qt::black);
  // The highlight goes under the others: the topmost scatter item takes the mouse press.
  for (auto* s : {selected_, feasible_, front_}) c->addSeries(s);
  auto* x = new QValueAxis;
  x->setTitleText(tr("TPOT (ms)"));
  x->setLabelFormat("%.0f");
  auto* y = new QValueAxis;
  y->setTitleText(tr("tokens/s per device"));
  y->setLabelFormat("%.0f");
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  for (auto* s : {selected_, feasible_, front_}) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  c->legend()->setAlignment(Qt::AlignBottom);
  // Whichever series takes the click (the topmost under the mouse), select the nearest drawn plan.
  for (auto* s : {feasible_, front_, selected_}) connect(s, &QScatterSeries::clicked, this, &ParetoChart::clicked);
}

QPointF ParetoChart::pointOf(const search::Evaluated& e) {
  return {e.prediction.tpot_s * 1e3, e.prediction.throughput_tokens_per_s_per_device};
}

void ParetoChart::setResult(std::shared_ptr<const search::SearchResult> result) {
  result_ = std::move(result);
  feasible_plans_.clear();
  front_plans_.clear();
  highlighted_.reset();
  selected_->clear();
  QList<QPointF> fp, pp;
  double max_x = 1, max_y = 1;
  if (result_) {
    std::vector<size_t> all;
    for (size_t i = 0; i < result_->all.size(); ++i)
      if (result_->all[i].meets_sla) all.push_back(i);
    const size_t stride = all.size() > kMaxPoints ? (all.size() + kMaxPoints - 1) / kMaxPoints : 1;
    for (size_t k = 0; k < all.size(); k += stride) feasible_plans_.push_back(all[k]);
    front_plans_ = result_->pareto;
    for (size_t i : feasible_plans_) fp.push_back(pointOf(result_->all[i]));
    for (size_t i : front_plans_) pp.push_back(pointOf(result_->all[i]));
    for (size_t i : all) {
      const QPointF p = pointOf(result_->all[i]);
      max_x = std::max(max_x, p.x());
      max_y = std::max(max_y, p.y());
    }
    chart()->setTitle(all.size() > feasible_plans_.size()
                          ? tr("Pareto front: tokens/s/device against TPOT (%1 of %2 feasible plans drawn)")
                                .arg(feasible_plans_.size())
                                .arg(all.size())
                          : tr("Pareto front: tokens/s/device against TPOT (%1 feasible plans)").arg(all.size()));
  }
  feasible_->replace(fp);
  front_->replace(pp);
  auto axes_x = chart()->axes(Qt::Horizontal), axes_y = chart()->axes(Qt::Vertical);
  static_cast<QValueAxis*>(axes_x.front())->setRange(0, max_x * 1.05);
  static_cast<QValueAxis*>(axes_y.front())->setRange(0, max_y * 1.08);
  static_cast<QValueAxis*>(axes_x.front())->applyNiceNumbers();
  static_cast<QValueAxis*>(axes_y.front())->applyNiceNumbers();
}

void ParetoChart::highlight(std::optional<size_t> plan) {
  if (plan == highlighted_) return;
  highlighted_.reset();
  selected_->clear();
  if (!result_ || !plan || *plan >= result_->all.size()) return;
  const auto& e = result_->all[*plan];
  if (!e.prediction.fits) return;  // no time: not on this chart
  highlighted_ = plan;
  selected_->append(pointOf(e));
}

void ParetoChart::clicked(const QPointF& p) {
  if (!result_) return;
  std::vector<size_t> plans = front_plans_;
  plans.insert(plans.end(), feasible_plans_.begin(), feasible_plans_.end());
  // The nearest drawn point, in screen distance.
  const QPointF target = chart()->mapToPosition(p);
  double best = std::numeric_limits<double>::infinity();
  std::optional<size_t> hit;
  for (size_t i : plans) {
    const QPointF d = chart()->mapToPosition(pointOf(result_->all[i])) - target;
    const double dist = d.x() * d.x() + d.y() * d.y();
    if (dist < best) best = dist, hit = i;
  }
  if (hit) emit planClicked(*hit);
}

}  // namespace dayzero::gui
