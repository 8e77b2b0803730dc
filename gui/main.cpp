// dayzero-gui [--scenario S] [--screenshot out.png [--size WxH]] [--threads N]:
// the desktop app. With --screenshot it opens the window at that size, runs the
// search, selects the top plan, saves the rendered window and exits (for docs
// and tests; works under QT_QPA_PLATFORM=offscreen).
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("dayzero-gui");
  QApplication::setApplicationVersion("0.1.0");
  QCommandLineParser cli;
  cli.setApplicationDescription("DayZero: explore the plans for serving a large model on a cluster.");
  cli.addHelpOption();
  QCommandLineOption scenario("scenario", "Scenario JSON file, or the name of a bundled scenario.", "S");
  QCommandLineOption screenshot("screenshot", "Run the search, save the window as PNG to FILE and exit.", "FILE");
  QCommandLineOption size("size", "Window size, e.g. 1600x1000.", "WxH", "1600x1000");
  QCommandLineOption threads("threads", "Search threads (default: every core).", "N", "0");
  cli.addOptions({scenario, screenshot, size, threads});
  cli.process(app);

  const QStringList wh = cli.value(size).split('x');
  bool ok_w = false, ok_h = false;
  const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
  if (!ok_w || !ok_h || w < 200 || h < 200) {
    std::fprintf(stderr, "dayzero-gui: --size wants WxH (at least 200x200), got %s\n", qPrintable(cli.value(size)));
    return 1;
  }
  const QString shot = cli.value(screenshot);
  if (!shot.isEmpty() && !cli.isSet(scenario)) {
    std::fprintf(stderr, "dayzero-gui: --screenshot needs --scenario\n");
    return 1;
  }

  dayzero::gui::MainWindow window;
  window.runner()->setThreads(cli.value(threads).toInt());
  window.resize(w, h);
  window.show();
  if (!shot.isEmpty()) {
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFailed, &app, [](const QString& message) {
      std::fprintf(stderr, "dayzero-gui: %s\n", qPrintable(message));
      QApplication::exit(2);
    });
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFinished, &app, [&window, shot] {
      // Let the layouts and charts settle before rendering.
      QTimer::singleShot(300, &window, [&window, shot] {
        if (!window.grab().save(shot)) {
          std::fprintf(stderr, "dayzero-gui: cannot write %s\n", qPrintable(shot));
          QApplication::exit(1);
          return;
        }
        QApplication::exit(0);
      });
    });
  }
  if (cli.isSet(scenario)) window.openScenario(cli.value(scenario));
  return app.exec();
}
