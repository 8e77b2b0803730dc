#include "gui/search_runner.h"

#include <exception>

#include "serve/engine_settings.h"

namespace dayzero::gui {

SearchRunner::SearchRunner(QObject* parent) : QObject(parent) { qRegisterMetaType<dayzero::gui::SearchOutcome>(); }

SearchRunner::~SearchRunner() {
  ++generation_;
  if (stop_) *stop_ = true;
  for (QThread* t : threads_in_flight_) {
    t->wait();
    delete t;
  }
}

void SearchRunner::start(const QString& scenario_file) {
  const unsigned gen = ++generation_;
  active_ = gen;
  const std::string file = scenario_file.toStdString();
  const int threads = threads_;
  if (stop_) *stop_ = true;  // a run still in flight stops
  stop_ = std::make_shared<std::atomic<bool>>(false);
  QThread* t = QThread::create([this, gen, file, threads, stop = stop_] {
    try {
      auto session = std::make_shared<const Session>(load_session(resolve_scenario(file)));
      search::SearchOptions so;
      so.threads = threads;
      so.cancel = stop.get();
      so.engine_memory =  // plans the scenario's engine can hold at their batch, as `dayzero plan` finds them
          serve::engine_memory_rules(session->scenario.engine, session->model, session->cluster.device_spec());
      so.kernels = serve::engine_kernels(session->scenario.engine);
      so.progress = [this, gen](size_t done, size_t total, double elapsed) {
        if (generation_ != gen) return;
        QMetaObject::invokeMethod(
            this,
            [this, gen, done, total, elapsed] {
              if (active_ == gen) emit progress(done, total, elapsed);
            },
            Qt::QueuedConnection);
      };
      auto result = std::make_shared<const search::SearchResult>(
          search::run_search(session->scenario, session->model, session->cluster, session->efficiency, so));
      SearchOutcome outcome{session, result};
      QMetaObject::invokeMethod(
          this,
          [this, gen, outcome] {
            if (active_ != gen) return;
            active_ = 0;
            emit finished(outcome);
          },
          Qt::QueuedConnection);
    } catch (const search::Cancelled&) {
      // cancel() has told the window already
    } catch (const std::exception& e) {
      const QString message = QString::fromStdString(e.what());
      QMetaObject::invokeMethod(
          this,
          [this, gen, message] {
            if (active_ != gen) return;
            active_ = 0;
            emit failed(message);
          },
          Qt::QueuedConnection);
    }
  });
  threads_in_flight_.push_back(t);
  connect(t, &QThread::finished, this, &SearchRunner::reap);
  t->start();
}

void SearchRunner::cancel() {
  if (active_ == 0) return;
  ++generation_;
  if (stop_) *stop_ = true;
  active_ = 0;
  emit cancelled();
}

void SearchRunner::reap() {
  for (auto it = threads_in_flight_.begin(); it != threads_in_flight_.end();) {
    if ((*it)->isFinished()) {
      (*it)->deleteLater();
      it = threads_in_flight_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dayzero::gui
