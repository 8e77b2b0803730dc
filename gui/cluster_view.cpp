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

// Scene units, before the view scales the drawing to fit: a device's square, the gap
// between squares, a node's padding and the height of its name.
constexpr double kSquare = 20, kGap = 4, kPad = 6, kLabelH = 14;

// Devices in a node: rows of up to 8; nodes in a grid about as wide as the view.
struct NodeGrid {
  int dev_cols = 1, dev_rows = 1;  // devices in a node
  double node_w = 0, node_h = 0;   // a node's box
  int node_cols = 1;               // nodes in a row
  double scale = 0;                // the drawing's scale in the view
};

NodeGrid node_grid(int nodes, int per_node, double view_w, double view_h) {
  NodeGrid g;
  g.dev_cols = std::min(per_node, 8);
  g.dev_rows = (per_node + g.dev_cols - 1) / g.dev_cols;
  g.node_w = kPad * 2 + g.dev_cols * kSquare + (g.dev_cols - 1) * kGap;
  g.node_h = kLabelH + kPad * 2 + g.dev_rows * kSquare + (g.dev_rows - 1) * kGap;
  // Nodes in the grid that lets the drawing be largest in the view.
  for (int cols = 1; cols <= nodes; ++cols) {
    const double rows = std::ceil(static_cast<double>(nodes) / cols);
    const double sc = std::min(view_w / (cols * (g.node_w + 10)), view_h / (rows * (g.node_h + 10)));
    if (sc > g.scale) {
      g.scale = sc;
      g.node_cols = cols;
    }
  }
  return g;
}

// Each device's worker and rank in it. A disaggregated plan's prefill workers take
// the first devices, its decode workers the next ones (plan::Disaggregation); every
// worker's groups are numbered alike, and prefill devices are hatched.
struct Place {
  const plan::Plan* worker;
  int rank;
  QString what;  // "" or "prefill worker 2", "decode worker 0"
};

struct Placement {
  std::optional<plan::Plan> prefill, decode;  // a disaggregated plan's workers, which places point into
  std::map<uint32_t, Place> rank_of_device;
};

// Fills `out` in place, since its places point into its own workers.
void place_ranks(const std::optional<plan::Plan>& plan, Placement& out) {
  if (plan && !plan->disaggregated.on()) {
    for (int r = 0; r < plan->world_size(); ++r) out.rank_of_device[plan->device_of(r)] = {&*plan, r, {}};
  } else if (plan) {
    out.prefill = plan->prefill_worker();
    out.decode = plan->decode_worker();
    uint32_t next = 0;
    const auto place = [&](const plan::Plan& w, int workers, const char* kind) {
      for (int k = 0; k < workers; ++k)
        for (int r = 0; r < w.world_size(); ++r)
          out.rank_of_device[next++] = {&w, r, QString("%1 worker %2").arg(kind).arg(k)};
    };
    place(*out.prefill, plan->disaggregated.prefill_workers, "prefill");
    place(*out.decode, plan->disaggregated.decode_workers, "decode");
  }
}

// One device's square at (x, y), coloured by its group under `c` (counted in `groups`)
// when the plan uses it; `tip` names its node and device.
void draw_device(QGraphicsScene* s, double x, double y, QString tip, const Place* at, bool has_plan,
                 ClusterView::Colouring c, std::map<int, int>& groups) {
  QColor fill(220, 220, 220);
  bool hatched = false;
  if (at) {
    const int g = ClusterView::groupOf(*at->worker, at->rank, c);
    fill = group_colour(g);
    ++groups[g];
    hatched = at->what.startsWith("prefill");
    tip += (at->what.isEmpty() ? QString() : ", " + at->what) +
           QString(", rank %1, %2 %3").arg(at->rank).arg(colouring_name(c)).arg(g);
  } else if (has_plan) {
    tip += ", unused by the plan";
  }
  auto* item = s->addRect(x, y, kSquare, kSquare, QPen(QColor(60, 60, 60)), QBrush(fill));
  if (hatched)
    s->addRect(x, y, kSquare, kSquare, QPen(Qt::NoPen), QBrush(QColor(255, 255, 255, 150), Qt::BDiagPattern));
  item->setToolTip(tip);
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
  const int draw_h = viewport()->height() - legendHeightPx();
  const double view_w = std::max(40, viewport()->width()), view_h = std::max(40, draw_h);
  const NodeGrid grid = node_grid(nodes, per_node, view_w, view_h);
  // Node names only where they fit; a tooltip on every device names its node.
  const bool node_labels = grid.scale >= 0.6;
  Placement placed;
  place_ranks(plan_, placed);
  std::map<int, int> groups;  // group -> devices
  QFont small;
  small.setPointSizeF(7);
  for (int n = 0; n < nodes; ++n) {
    const double x0 = (n % grid.node_cols) * (grid.node_w + 10), y0 = (n / grid.node_cols) * (grid.node_h + 10);
    s->addRect(x0, y0, grid.node_w, grid.node_h, QPen(QColor(90, 90, 90)), QBrush(QColor(245, 245, 245)));
    const auto& names = cluster_->config().node_names;
    const QString node_name =
        names.size() > static_cast<size_t>(n) ? QString::fromStdString(names[n]) : QString("n%1").arg(n);
    if (node_labels) {
      auto* label = s->addSimpleText(node_name);
      label->setFont(small);
      label->setPos(x0 + kPad, y0 + 1);
    }
    for (int l = 0; l < per_node; ++l) {
      const uint32_t d = cluster_->device(static_cast<uint32_t>(n), static_cast<uint32_t>(l));
      const double x = x0 + kPad + (l % grid.dev_cols) * (kSquare + kGap),
                   y = y0 + kLabelH + kPad + (l / grid.dev_cols) * (kSquare + kGap);
      const auto it = placed.rank_of_device.find(d);
      draw_device(s, x, y, QString("%1, device %2").arg(node_name).arg(d),
                  it != placed.rank_of_device.end() ? &it->second : nullptr, plan_.has_value(), colouring_, groups);
    }
  }
  updateLegend(groups, static_cast<int>(placed.rank_of_device.size()));
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
