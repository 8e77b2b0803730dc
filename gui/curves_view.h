#pragma once
// The Curves tab: the selected plan served request by request at 1, 2, 4 ... requests
// in flight (up to four times its own batch, at least 64, at most 4,096), under the
// scenario's engine, its TTFT, TPOT and throughput drawn with the SLA's limits
// (SweepChart, as `dayzero sweep` draws them). The serving runs on a worker thread
// when the tab is shown or the plan changes; a newer plan supersedes an older run.

#include <QWidget>
#include <memory>
#include <optional>
#include <thread>

#include "gui/session.h"
#include "serve/sweep.h"

namespace dayzero::gui {

class SweepChart;

class CurvesView : public QWidget {
  Q_OBJECT
 public:
  explicit CurvesView(QWidget* parent = nullptr);
  ~CurvesView() override;

  void setSession(std::shared_ptr<const Session> session);
  void setPlan(const search::Evaluated* e);  // nullptr: nothing selected
  SweepChart* chart() const { return chart_; }
  const std::optional<serve::Sweep>& sweep() const { return sweep_; }  // the last one drawn

  // The concurrencies the tab serves a plan at.
  static std::vector<double> concurrencies(const plan::Plan& p);

 signals:
  void sweepDrawn();

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void start();
  void finish(unsigned generation, serve::Sweep sweep, QString error);

  std::shared_ptr<const Session> session_;
  std::optional<plan::Plan> plan_;
  std::optional<serve::Sweep> sweep_;
  SweepChart* chart_;
  std::thread worker_;
  unsigned generation_ = 0;  // bumped by every new plan; a run reports only if still current
  bool pending_ = false;     // a plan waits for the tab to be shown
};

}  // namespace dayzero::gui
