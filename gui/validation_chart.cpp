#include "gui/validation_chart.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QValueAxis>
#include <algorithm>

namespace dayzero::gui {

ValidationChart::ValidationChart(QString phase, QWidget* parent)
    : QChartView(new QChart, parent), phase_(std::move(phase)) {
  setRenderHint(QPainter::Antialiasing);
  chart()->setMargins(QMargins(2, 2, 2, 2));
  chart()->legend()->setAlignment(Qt::AlignBottom);
  chart()->setTitle(tr("%1 by op kind").arg(phase_));
}

void ValidationChart::setReport(const simulate::ValidationReport* r) {
  QChart* c = chart();
  c->removeAllSeries();
  series_ = nullptr;
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
  categories_.clear();
  c->setTitle(tr("%1 by op kind").arg(phase_));
  if (!r) return;
  std::vector<const simulate::GroupValidation*> groups;
  double top_s = 0;
  for (const auto& g : r->groups)
    if (QString::fromStdString(g.phase) == phase_) {
      groups.push_back(&g);
      top_s = std::max({top_s, g.measured_s, g.predicted_s});
    }
  if (groups.empty()) return;
  const bool ms = top_s >= 1e-3;
  const double scale = ms ? 1e3 : 1e6;
  unit_ = ms ? QStringLiteral("ms") : QStringLiteral("us");
  auto* measured = new QBarSet(tr("measured"));
  auto* predicted = new QBarSet(tr("predicted"));
  measured->setColor(QColor(70, 110, 180));
  predicted->setColor(QColor(230, 140, 40));
  for (const auto* g : groups) {
    categories_ << QString::fromStdString(g->kind);
    *measured << g->measured_s * scale;
    *predicted << g->predicted_s * scale;
  }
  series_ = new QBarSeries;
  series_->append(measured);
  series_->append(predicted);
  c->addSeries(series_);
  c->setTitle(tr("%1 by op kind: all calls, all ranks (%2)").arg(phase_, unit_));
  auto* x = new QBarCategoryAxis;
  x->append(categories_);
  x->setTitleText(tr("op kind"));
  auto* y = new QValueAxis;
  y->setRange(0, top_s * scale * 1.1);
  y->applyNiceNumbers();
  y->setLabelFormat(top_s * scale < 10 ? "%.1f" : "%.0f");
  y->setTitleText(tr("time (%1)").arg(unit_));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  series_->attachAxis(x);
  series_->attachAxis(y);
}

}  // namespace dayzero::gui
