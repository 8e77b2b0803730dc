#include "gui/cluster_view.h"

#include <QPainter>

#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QResizeEvent>
#include <cmath>
#include <map>

namespace dayzero::gui {

namespace {

QColor group_colour(int g) {
  // Golden-angle hues: neighbouring groups get distant colours.
  return QColor::fromHsv(static_cast<int>(std::fmod(g * 137.508, 360.0)), 150 + (g % 3) * 35, 230 - (g % 2) * 40);
}

const char* colouring_name(ClusterView::Colouring c) {
  switch (c) {
    case ClusterView::Colouring::TpGroup: return "TP group";
    case ClusterView::Colouring::EpGroup: return "EP group";
    case ClusterView::Colouring::PpStage: return "PP stage";
  }
  return "";
}

}  // namespace

ClusterView::ClusterView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setRenderHint(QPainter::Antialiasing);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
}

void ClusterView::setCluster(const topology::Cluster* cluster) {
  cluster_ = cluster;
  plan_.reset();
  rebuild();
}

void ClusterView::setPlan(const plan::Plan* plan) {
  if (plan) plan_ = *plan;
  else plan_.reset();
  rebuild();
}

void ClusterView::setColouring(Colouring c) {
  colouring_ = c;
  rebuild();
}

int ClusterView::groupOf(const plan::Plan& p, int rank, Colouring c) {
  const int stage = p.stage_of(rank);
  switch (c) {
    case Colouring::TpGroup: return stage * p.attention.dp + p.attn_dp_index(rank);
    case Colouring::EpGroup: {
      const int per_stage = p.ranks_per_stage() / p.moe.ep;  // moe_tp x moe_dp groups per stage
      return stage * per_stage + p.moe_dp_index(rank) * p.moe.tp + p.moe_tp_index(rank);
    }
    case Colouring::PpStage: return stage;
  }
  return 0;
}

void ClusterView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  rebuild();  // the node grid follows the view's aspect ratio
}

void ClusterView::rebuild() {
  QGraphicsScene* s = scene();
  s->clear();
  if (!cluster_) return;
  const int nodes = static_cast<int>(cluster_->num_nodes());
  const int per_node = static_cast<int>(cluster_->devices_per_node());
  // Devices in a node: rows of up to 8; nodes in a grid about as wide as the view.
  const int dev_cols = std::min(per_node, 8), dev_rows = (per_node + dev_cols - 1) / dev_cols;
  constexpr double sq = 20, gap = 4, pad = 6, label_h = 14;
  const double node_w = pad * 2 + dev_cols * sq + (dev_cols - 1) * gap;
  const double node_h = label_h + pad * 2 + dev_rows * sq + (dev_rows - 1) * gap;
  const int draw_h = viewport()->height() - legendHeightPx();
  // Nodes in the grid that lets the drawing be largest in the view.
  const double view_w = std::max(40, viewport()->width()), view_h = std::max(40, draw_h);
  int node_cols = 1;
  double best_scale = 0;
  for (int cols = 1; cols <= nodes; ++cols) {
    const double rows = std::ceil(static_cast<double>(nodes) / cols);
    const double sc = std::min(view_w / (cols * (node_w + 10)), view_h / (rows * (node_h + 10)));
    if (sc > best_scale) {
      best_scale = sc;
      node_cols = cols;
    }
  }
  // Node names only where they fit; a tooltip on every device names its node.
  const bool node_labels = best_scale >= 0.6;
  // Each device's worker and rank in it. A disaggregated plan's prefill workers take
  // the first devices, its decode workers the next ones (plan::Disaggregation); every
  // worker's groups are numbered alike, and prefill devices are hatched.
  struct Place {
    const plan::Plan* worker;
    int rank;
    QString what;  // "" or "prefill worker 2", "decode worker 0"
  };
  std::map<uint32_t, Place> rank_of_device;
  std::optional<plan::Plan> prefill, decode;
  if (plan_ && !plan_->disaggregated.on()) {
    for (int r = 0; r < plan_->world_size(); ++r) rank_of_device[plan_->device_of(r)] = {&*plan_, r, {}};
  } else if (plan_) {
    prefill = plan_->prefill_worker();
    decode = plan_->decode_worker();
    uint32_t next = 0;
    const auto place = [&](const plan::Plan& w, int workers, const char* kind) {
      for (int k = 0; k < workers; ++k)
        for (int r = 0; r < w.world_size(); ++r)
          rank_of_device[next++] = {&w, r, QString("%1 worker %2").arg(kind).arg(k)};
    };
    place(*prefill, plan_->disaggregated.prefill_workers, "prefill");
    place(*decode, plan_->disaggregated.decode_workers, "decode");
  }
  std::map<int, int> groups;  // group -> devices
  QFont small;
  small.setPointSizeF(7);
  for (int n = 0; n < nodes; ++n) {
    const double x0 = (n % node_cols) * (node_w + 10), y0 = (n / node_cols) * (node_h + 10);
    s->addRect(x0, y0, node_w, node_h, QPen(QColor(90, 90, 90)), QBrush(QColor(245, 245, 245)));
    const auto& names = cluster_->config().node_names;
    const QString node_name =
        names.size() > static_cast<size_t>(n) ? QString::fromStdString(names[n]) : QString("n%1").arg(n);
    if (node_labels) {
      auto* label = s->addSimpleText(node_name);
      label->setFont(small);
      label->setPos(x0 + pad, y0 + 1);
    }
    for (int l = 0; l < per_node; ++l) {
      const uint32_t d = cluster_->device(static_cast<uint32_t>(n), static_cast<uint32_t>(l));
      const double x = x0 + pad + (l % dev_cols) * (sq + gap), y = y0 + label_h + pad + (l / dev_cols) * (sq + gap);
      QColor fill(220, 220, 220);
      QString tip = QString("%1, device %2").arg(node_name).arg(d);
      bool hatched = false;
      if (auto it = rank_of_device.find(d); it != rank_of_device.end()) {
        const Place& at = it->second;
        const int g = groupOf(*at.worker, at.rank, colouring_);
        fill = group_colour(g);
        ++groups[g];
        hatched = at.what.startsWith("prefill");
        tip += (at.what.isEmpty() ? QString() : ", " + at.what) +
               QString(", rank %1, %2 %3").arg(at.rank).arg(colouring_name(colouring_)).arg(g);
      } else if (plan_) {
        tip += ", unused by the plan";
      }
      auto* item = s->addRect(x, y, sq, sq, QPen(QColor(60, 60, 60)), QBrush(fill));
      if (hatched) s->addRect(x, y, sq, sq, QPen(Qt::NoPen), QBrush(QColor(255, 255, 255, 150), Qt::BDiagPattern));
      item->setToolTip(tip);
    }
  }
  updateLegend(groups, static_cast<int>(rank_of_device.size()));
  fitToView();
}

void ClusterView::updateLegend(const std::map<int, int>& groups, int used_devices) {
  // Drawn in drawForeground: a swatch per group (the first 12), and the count.
  const int devices = static_cast<int>(cluster_->num_devices());
  legend_head_ = plan_ ? QString("colour = %1 (%2 groups)").arg(colouring_name(colouring_)).arg(groups.size())
                       : QString("%1 nodes x %2 %3")
                             .arg(cluster_->num_nodes())
                             .arg(cluster_->devices_per_node())
                             .arg(QString::fromStdString(cluster_->device_spec().name));
  if (plan_ && used_devices < devices) legend_head_ += ", grey = unused";
  if (plan_ && plan_->disaggregated.on()) legend_head_ += ", hatched = prefill pool";
  legend_.clear();
  for (const auto& [g, count] : groups) {
    if (legend_.size() == 12) break;
    legend_.emplace_back(group_colour(g), QString("%1 (%2)").arg(g).arg(count));
  }
}

void ClusterView::fitToView() {
  // The drawing above the legend: one scale for both axes.
  QGraphicsScene* s = scene();
  const QRectF bounds = s->itemsBoundingRect().adjusted(-4, -4, 4, 4);
  s->setSceneRect(bounds);
  const double avail_h = std::max(20, viewport()->height() - legendHeightPx());
  const double scale = std::min(viewport()->width() / bounds.width(), avail_h / bounds.height());
  setTransform(QTransform::fromScale(scale, scale));
  // Keep the drawing at the top of the view, the legend below it.
  setAlignment(Qt::AlignHCenter | Qt::AlignTop);
  viewport()->update();
}

int ClusterView::legendHeightPx() const {
  const int per_row = std::max(1, (viewport()->width() - 8) / 70);
  const int rows = (static_cast<int>(legend_.size()) + per_row - 1) / per_row;
  return 22 + rows * 16;
}

void ClusterView::drawForeground(QPainter* painter, const QRectF&) {
  painter->save();
  painter->resetTransform();
  QFont f = painter->font();
  f.setPointSizeF(8);
  painter->setFont(f);
  const int top = viewport()->height() - legendHeightPx() + 4;
  painter->setPen(Qt::black);
  painter->drawText(QPointF(4, top + 10), legend_head_);
  const int per_row = std::max(1, (viewport()->width() - 8) / 70);
  for (size_t k = 0; k < legend_.size(); ++k) {
    const int x = 4 + static_cast<int>(k % per_row) * 70, y = top + 18 + static_cast<int>(k / per_row) * 16;
    painter->setBrush(legend_[k].first);
    painter->drawRect(x, y, 12, 12);
    painter->drawText(QPointF(x + 16, y + 10), legend_[k].second);
  }
  painter->restore();
}

}  // namespace dayzero::gui
