#include "gui/sweep_chart.h"

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace dayzero::gui {

namespace {

struct Curve {
  QString name;
  QColor color;
  bool dashed = false;
  std::vector<QPointF> points;
  bool right = false;  // on the second (right) y axis
};

// The x axis: logarithmic (base 2) when the values span more than 8x, as concurrency
// and rate sweeps do.
QAbstractAxis* x_axis(const serve::Sweep& s) {
  double lo = 0, hi = 0;
  for (const auto& p : s.points) {
    lo = lo == 0 ? p.x : std::min(lo, p.x);
    hi = std::max(hi, p.x);
  }
  const QString title =
      QStringLiteral("%1 (%2)").arg(QString::fromStdString(std::string(serve::sweep_axis_name(s.axis))),
                                    QString::fromStdString(std::string(serve::sweep_axis_unit(s.axis))));
  if (lo > 0 && hi / lo > 8) {
    auto* a = new QLogValueAxis;
    a->setBase(2);
    a->setLabelFormat("%g");
    a->setLabelsAngle(-45);
    QFont small = a->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    a->setLabelsFont(small);
    a->setRange(lo / 1.5, hi * 1.5);  // room for the end labels
    a->setTitleText(title);
    return a;
  }
  auto* a = new QValueAxis;
  a->setRange(0, hi * 1.05);
  a->applyNiceNumbers();
  a->setLabelFormat("%g");
  a->setTitleText(title);
  return a;
}

// A y axis over the curves on that side: logarithmic (base 10) when the values span
// more than 30x (TTFT once requests queue), else linear from 0.
QAbstractAxis* y_axis(const std::vector<Curve>& curves, bool right, const QString& title, bool log_ok) {
  double top = 0, bottom = 0;
  for (const Curve& cv : curves)
    if (cv.right == right)
      for (const QPointF& p : cv.points) {
        top = std::max(top, p.y());
        if (p.y() > 0) bottom = bottom == 0 ? p.y() : std::min(bottom, p.y());
      }
  if (log_ok && bottom > 0 && top / bottom > 30) {
    auto* y = new QLogValueAxis;
    y->setBase(10);
    y->setLabelFormat("%g");
    y->setRange(std::pow(10, std::floor(std::log10(bottom))), std::pow(10, std::ceil(std::log10(top))));
    y->setMinorTickCount(8);
    y->setTitleText(title + QObject::tr(", log scale"));
    return y;
  }
  auto* y = new QValueAxis;
  y->setTitleText(title);
  y->setRange(0, top > 0 ? top * 1.1 : 1);
  y->applyNiceNumbers();
  y->setLabelFormat("%g");
  return y;
}

void fill(QChart* c, const serve::Sweep& s, const QString& title, const QString& y_title,
          const std::vector<Curve>& curves, bool log_ok, const QString& right_title = {}) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
  c->setTitle(title);
  if (s.points.empty()) return;
  QAbstractAxis* x = x_axis(s);
  QAbstractAxis* y = y_axis(curves, false, y_title, log_ok);
  QAbstractAxis* y2 = right_title.isEmpty() ? nullptr : y_axis(curves, true, right_title, log_ok);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  if (y2) c->addAxis(y2, Qt::AlignRight);
  for (const Curve& cv : curves) {
    auto* series = new QLineSeries;
    series->setName(cv.name);
    QPen pen(cv.color);
    pen.setWidthF(2);
    if (cv.dashed) pen.setStyle(Qt::DashLine);
    series->setPen(pen);
    series->setPointsVisible(!cv.dashed);
    for (const QPointF& p : cv.points) series->append(p);
    c->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(cv.right && y2 ? y2 : y);
  }
}

// A curve of each point's value (points that could not be served are skipped).
template <class F>
std::vector<QPointF> curve(const serve::Sweep& s, F value) {
  std::vector<QPointF> out;
  for (const auto& p : s.points)
    if (p.error.empty()) out.emplace_back(p.x, value(p));
  return out;
}

// The SLA's limit across the sweep's range, as a dashed line.
Curve sla_line(const serve::Sweep& s, double limit) {
  Curve c{QObject::tr("SLA"), QColor(200, 40, 40), true, {}};
  if (limit <= 0 || s.points.empty()) return c;
  c.points = {{s.points.front().x, limit}, {s.points.back().x, limit}};
  return c;
}

QChartView* make_view() {
  auto* v = new QChartView(new QChart);
  v->setRenderHint(QPainter::Antialiasing);
  v->chart()->legend()->setAlignment(Qt::AlignBottom);
  v->chart()->setMargins(QMargins(2, 2, 2, 2));
  v->setMinimumSize(240, 200);
  return v;
}

}  // namespace

SweepChart::SweepChart(QWidget* parent)
    : QWidget(parent), message_(new QLabel), ttft_(make_view()), tpot_(make_view()), throughput_(make_view()) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  message_->setWordWrap(true);
  column->addWidget(message_);
  auto* row = new QHBoxLayout;
  row->addWidget(ttft_);
  row->addWidget(tpot_);
  row->addWidget(throughput_);
  column->addLayout(row, 1);
}

QChart* SweepChart::ttftChart() const { return ttft_->chart(); }
QChart* SweepChart::tpotChart() const { return tpot_->chart(); }
QChart* SweepChart::throughputChart() const { return throughput_->chart(); }

void SweepChart::setMessage(const QString& text) { message_->setText(text); }

void SweepChart::setSweep(const serve::Sweep& s) {
  const QColor mean(40, 90, 170), p90(230, 140, 40), per_device(60, 150, 80);
  using P = serve::SweepPoint;
  std::vector<Curve> ttft = {{tr("mean"), mean, false, curve(s, [](const P& p) { return p.served.ttft_s.mean; })},
                             {tr("p90"), p90, false, curve(s, [](const P& p) { return p.served.ttft_s.p90; })}};
  if (s.max_ttft_s > 0) ttft.push_back(sla_line(s, s.max_ttft_s));
  std::vector<Curve> tpot = {{tr("mean"), mean, false, curve(s, [](const P& p) { return p.served.tpot_s.mean * 1e3; })},
                             {tr("p90"), p90, false, curve(s, [](const P& p) { return p.served.tpot_s.p90 * 1e3; })}};
  if (s.max_tpot_s > 0) tpot.push_back(sla_line(s, s.max_tpot_s * 1e3));
  const std::vector<Curve> tput = {
      {tr("output tokens/s"), mean, false, curve(s, [](const P& p) { return p.served.output_tokens_per_s; })},
      {tr("per device (right)"), per_device, false,
       curve(s,
             [](const P& p) {
               return p.served.output_tokens_per_s / static_cast<double>(std::max<int64_t>(1, p.devices));
             }),
       true}};
  fill(ttft_->chart(), s, tr("TTFT"), tr("time to first token (s)"), ttft, true);
  fill(tpot_->chart(), s, tr("TPOT"), tr("time per output token (ms)"), tpot, true);
  fill(throughput_->chart(), s, tr("Throughput"), tr("output tokens/s"), tput, false, tr("output tokens/s per device"));
  message_->setText(QString::fromStdString(s.title));
}

bool render_sweep_png(const serve::Sweep& s, const QString& path, int width, int height, QString* error) {
  SweepChart chart;
  chart.setAttribute(Qt::WA_DontShowOnScreen);
  chart.resize(width, height);
  chart.setSweep(s);
  chart.show();
  chart.layout()->activate();
  if (!chart.grab().save(path, "PNG")) {
    if (error) *error = QObject::tr("cannot write %1").arg(path);
    return false;
  }
  return true;
}

}  // namespace dayzero::gui
