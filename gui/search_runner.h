#pragma once
// Loads a scenario and runs search::run_search on a worker thread, reporting
// progress (from SearchOptions::progress) and the result back on the GUI thread.
// cancel() stops the run in flight (SearchOptions::cancel: its workers stop at their
// next group) and frees the window at once; a result still arriving is dropped.

#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <memory>

#include "gui/session.h"

namespace dayzero::gui {

struct SearchOutcome {
  std::shared_ptr<const Session> session;
  std::shared_ptr<const search::SearchResult> result;
};

class SearchRunner : public QObject {
  Q_OBJECT
 public:
  explicit SearchRunner(QObject* parent = nullptr);
  ~SearchRunner() override;  // cancels a run in flight and waits for it to stop

  void setThreads(int threads) { threads_ = threads; }
  bool running() const { return active_ != 0; }

 public slots:
  void start(const QString& scenario_file);
  void cancel();

 signals:
  void progress(qulonglong done, qulonglong total, double elapsed_s);
  void finished(const dayzero::gui::SearchOutcome& outcome);
  void failed(const QString& message);
  void cancelled();

 private:
  void reap();
  int threads_ = 0;
  std::atomic<unsigned> generation_{0};
  std::shared_ptr<std::atomic<bool>> stop_;  // the run in flight's cancel flag
  unsigned active_ = 0;                      // generation of the run the UI waits for; 0 = none
  std::vector<QThread*> threads_in_flight_;
};

}  // namespace dayzero::gui

Q_DECLARE_METATYPE(dayzero::gui::SearchOutcome)
