#pragma once
// A drawing of the cluster: nodes as boxes, devices as squares, coloured by the
// selected plan's groups (TP group, EP group or PP stage), with a legend.

#include <QColor>
#include <QGraphicsView>
#include <QString>
#include <map>
#include <optional>
#include <vector>

#include "plan/plan.h"
#include "topology/cluster.h"

namespace dayzero::gui {

class ClusterView : public QGraphicsView {
  Q_OBJECT
 public:
  enum class Colouring { TpGroup, EpGroup, PpStage };

  explicit ClusterView(QWidget* parent = nullptr);
  void setCluster(const topology::Cluster* cluster);  // not owned; outlives the view's use
  void setPlan(const plan::Plan* plan);               // nullptr: devices uncoloured
  void setColouring(Colouring c);
  Colouring colouring() const { return colouring_; }

  // The group a rank is in under a colouring (from Plan's rank arithmetic).
  static int groupOf(const plan::Plan& p, int rank, Colouring c);

 protected:
  void resizeEvent(QResizeEvent* e) override;
  // The legend is drawn in viewport pixels, so it stays legible however far a
  // large cluster's drawing is scaled down.
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  void rebuild();
  void updateLegend(const std::map<int, int>& groups, int used_devices);  // group -> devices coloured so
  void fitToView();
  int legendHeightPx() const;
  QString legend_head_;
  std::vector<std::pair<QColor, QString>> legend_;
  const topology::Cluster* cluster_ = nullptr;
  std::optional<plan::Plan> plan_;
  Colouring colouring_ = Colouring::TpGroup;
};

}  // namespace dayzero::gui
