#include "gui/plan_charts.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QHorizontalBarSeries>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <algorithm>
#include <set>

namespace dayzero::gui {

namespace {

void reset(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

QChart* make_chart(const QString& title) {
  auto* c = new QChart;
  c->setTitle(title);
  c->setMargins(QMargins(2, 2, 2, 2));
  c->legend()->setAlignment(Qt::AlignBottom);
  QFont f = c->legend()->font();
  f.setPointSizeF(f.pointSizeF() * 0.9);
  c->legend()->setFont(f);
  return c;
}

// Which ranks get a bar: the fullest of each stage, then the rest in order.
std::vector<size_t> shown_ranks(const simulate::Prediction& p) {
  std::vector<size_t> picked;
  std::set<int> stages;
  std::vector<size_t> order(p.ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.ranks[a].total_bytes > p.ranks[b].total_bytes; });
  for (size_t i : order)
    if (picked.size() < static_cast<size_t>(kMaxMemoryBars) && stages.insert(p.ranks[i].stage).second)
      picked.push_back(i);
  for (size_t i = 0; i < p.ranks.size() && picked.size() < static_cast<size_t>(kMaxMemoryBars); ++i)
    if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
  std::sort(picked.begin(), picked.end());
  return picked;
}

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : QChartView(make_chart(tr("Memory per rank (GB)")), parent) {
  setRenderHint(QPainter::Antialiasing);
}

void MemoryChart::setPrediction(const simulate::Prediction* p) {
  QChart* c = chart();
  reset(c);
  if (!p || p->ranks.empty()) return;
  const auto ranks = shown_ranks(*p);
  c->setTitle(
      ranks.size() < p->ranks.size()
          ? tr("Memory per rank (GB), %1 of %2 ranks: fullest per stage first").arg(ranks.size()).arg(p->ranks.size())
          : tr("Memory per rank (GB)"));
  struct Kind {
    const char* name;
    int64_t simulate::RankMemory::*field;
    QColor colour;
  };
  const Kind kinds[] = {{"weights", &simulate::RankMemory::weights_bytes, QColor(70, 110, 180)},
                        {"KV cache", &simulate::RankMemory::kv_cache_bytes, QColor(90, 170, 90)},
                        {"activations", &simulate::RankMemory::activation_bytes, QColor(230, 160, 40)},
                        {"buffers", &simulate::RankMemory::buffer_bytes, QColor(160, 90, 170)},
                        {"overhead", &simulate::RankMemory::overhead_bytes, QColor(150, 150, 150)}};
  auto* series = new QStackedBarSeries;
  QStringList categories;
  double top = 0;
  for (size_t i : ranks) {
    categories << (ranks.size() > 8 ? QString::number(p->ranks[i].rank) : QString("r%1").arg(p->ranks[i].rank));
    top = std::max({top, static_cast<double>(p->ranks[i].total_bytes) / 1e9,
                    static_cast<double>(p->ranks[i].capacity_bytes) / 1e9});
  }
  for (const Kind& k : kinds) {
    auto* set = new QBarSet(tr(k.name));
    set->setColor(k.colour);
    set->setBorderColor(k.colour.darker(130));
    for (size_t i : ranks) *set << static_cast<double>(p->ranks[i].*k.field) / 1e9;
    series->append(set);
  }
  series->setBarWidth(0.7);
  c->addSeries(series);
  const double capacity = static_cast<double>(p->ranks[ranks.front()].capacity_bytes) / 1e9;
  auto* cap = new QLineSeries;
  cap->setName(tr("capacity"));
  cap->setPen(QPen(QColor(200, 30, 30), 2, Qt::DashLine));
  *cap << QPointF(-0.5, capacity) << QPointF(static_cast<double>(ranks.size()) - 0.5, capacity);
  c->addSeries(cap);
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  x->setTitleText(tr("rank"));
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.1);
  y->applyNiceNumbers();
  y->setLabelFormat("%.0f");
  y->setTitleText(tr("GB (1e9 bytes)"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  cap->attachAxis(x);
  cap->attachAxis(y);
}

StepTimeChart::StepTimeChart(QString title, QWidget* parent)
    : QChartView(make_chart(title), parent), title_(std::move(title)) {
  setRenderHint(QPainter::Antialiasing);
  chart()->legend()->hide();
}

void StepTimeChart::setStep(const simulate::StepTime* s) {
  QChart* c = chart();
  reset(c);
  c->setTitle(title_);
  if (!s) return;
  c->setTitle(tr("%1: %2 ms").arg(title_).arg(s->time_s * 1e3, 0, 'f', s->time_s < 0.1 ? 2 : 1));
  std::vector<std::pair<std::string, double>> kinds;
  for (const auto& [k, t] : s->by_kind_s)
    if (t > 0) kinds.emplace_back(simulate::cost_kind_name(k), t);
  if (s->bubble_s > 0) kinds.emplace_back("pp_bubble", s->bubble_s);
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  auto* set = new QBarSet(tr("ms"));
  set->setColor(QColor(70, 110, 180));
  QStringList categories;
  double top = 0;
  for (const auto& [k, t] : kinds) {
    categories << QString::fromStdString(k);
    *set << t * 1e3;
    top = std::max(top, t * 1e3);
  }
  auto* series = new QHorizontalBarSeries;
  series->append(set);
  series->setBarWidth(0.7);
  c->addSeries(series);
  auto* y = new QBarCategoryAxis;
  y->append(categories);
  auto* x = new QValueAxis;
  x->setRange(0, top > 0 ? top * 1.1 : 1);
  x->applyNiceNumbers();
  x->setLabelFormat(top < 10 ? "%.1f" : "%.0f");
  x->setTitleText(tr("ms"));
  c->addAxis(y, Qt::AlignLeft);
  c->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
}

}  // namespace dayzero::gui
