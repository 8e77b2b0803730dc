#include "gui/curves_view.h"

#include <QMetaObject>
#include <QPointer>
#include <QVBoxLayout>
#include <algorithm>

#include "core/data_dir.h"
#include "gui/sweep_chart.h"
#include "search/search.h"
#include "serve/calibration_files.h"
#include "serve/disaggregated.h"
#include "serve/engine_settings.h"

namespace dayzero::gui {

namespace {

// The plan served at each concurrency with the scenario's engine: its defaults for the
// worker's deployment, the shipped host overheads, the scenario's settings.
serve::Sweep serve_curve(const Session& s, const plan::Plan& p, const std::vector<double>& xs) {
  const serve::EngineOverheadTable overheads = serve::load_serving_calibration(core::data_dir(), "").engines;
  const serve::Engine engine = s.scenario.engine.engine.value_or(serve::Engine::vllm);
  const auto profile_of = [&](const plan::Plan& worker) {
    return serve::profile_for(engine, worker, s.model, s.cluster.device_spec(), overheads, s.scenario.engine);
  };
  serve::Client base;
  base.shape = {p.workload.input_len, p.workload.output_len,
                static_cast<int64_t>(static_cast<double>(p.workload.input_len) * p.workload.prefix_hit_rate)};
  simulate::Simulator sim(s.model, s.cluster, s.efficiency);
  serve::Sweep sweep =
      serve::run_sweep(serve::SweepAxis::concurrency, xs, base, [&](const serve::Client& c, serve::SweepPoint& pt) {
        pt.devices = p.devices_used();
        pt.served = serve::serve_plan(sim, p, profile_of, c);
      });
  search::Evaluated e;
  e.plan = p;
  sweep.title = s.model.config.display_family() + " on " + s.cluster.name() + ", " +
                std::string(serve::engine_name(engine)) + ": " + search::layout_name(e) + ", " +
                std::to_string(p.workload.input_len) + " + " + std::to_string(p.workload.output_len) + " tokens";
  sweep.max_ttft_s = s.scenario.sla.max_ttft_s;
  sweep.max_tpot_s = s.scenario.sla.max_tpot_s;
  return sweep;
}

}  // namespace

CurvesView::CurvesView(QWidget* parent) : QWidget(parent), chart_(new SweepChart) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  v->addWidget(chart_, 1);
  chart_->setMessage(tr("Select a plan: its latency curves appear here."));
}

CurvesView::~CurvesView() {
  ++generation_;
  if (worker_.joinable()) worker_.join();
}

std::vector<double> CurvesView::concurrencies(const plan::Plan& p) {
  const int64_t in_flight = p.workload.batch * std::max(1, p.disaggregated.decode_workers);
  const int64_t top = std::clamp<int64_t>(4 * in_flight, 64, 4096);
  std::vector<double> xs;
  for (int64_t c = 1; c <= top; c *= 2) xs.push_back(static_cast<double>(c));
  return xs;
}

void CurvesView::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  setPlan(nullptr);
}

void CurvesView::setPlan(const search::Evaluated* e) {
  ++generation_;
  plan_.reset();
  if (e && e->prediction.fits) plan_ = e->plan;
  if (!plan_) {
    chart_->setSweep({});
    chart_->setMessage(e ? tr("The selected plan does not fit: nothing to serve.")
                         : tr("Select a plan: its latency curves appear here."));
    return;
  }
  pending_ = true;
  if (isVisible()) start();
}

void CurvesView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (pending_) start();
}

void CurvesView::start() {
  if (!plan_ || !session_) return;
  pending_ = false;
  if (worker_.joinable()) worker_.join();  // an older run stops reporting (its generation is stale)
  const unsigned generation = generation_;
  chart_->setMessage(tr("Serving the plan at 1 … %1 requests in flight…").arg(concurrencies(*plan_).back()));
  QPointer<CurvesView> self(this);
  worker_ = std::thread([self, session = session_, plan = *plan_, generation] {
    serve::Sweep sweep;
    QString error;
    try {
      sweep = serve_curve(*session, plan, concurrencies(plan));
    } catch (const std::exception& ex) {
      error = QString::fromStdString(ex.what());
    }
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, sweep = std::move(sweep), error]() mutable {
          if (self) self->finish(generation, std::move(sweep), error);
        },
        Qt::QueuedConnection);
  });
}

void CurvesView::finish(unsigned generation, serve::Sweep sweep, QString error) {
  if (generation != generation_) return;  // a newer plan was selected meanwhile
  if (!error.isEmpty()) {
    chart_->setSweep({});
    chart_->setMessage(tr("Could not serve the plan: %1").arg(error));
    return;
  }
  chart_->setSweep(sweep);
  sweep_ = std::move(sweep);
  emit sweepDrawn();
}

}  // namespace dayzero::gui
