// dayzero-gui [--scenario S] [--measurements M.json [--device D] [--calibration C.json]]
//             [--screenshot out.png [--size WxH]] [--threads N]:
// the desktop app. With --screenshot it opens the window at that size, runs the
// search (or, with --measurements alone, shows predicted against measured),
// selects the top plan, saves the rendered window and exits (for docs and tests;
// works under QT_QPA_PLATFORM=offscreen).
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>

#include "gui/main_window.h"
#include "gui/measured_view.h"

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
  QCommandLineOption measurements("measurements", "Measurements JSON from `dayzero run`: predicted against measured.",
                                  "FILE");
  QCommandLineOption device("device", "Catalog device to predict the measurements on (default: cpu-host).", "NAME");
  QCommandLineOption calibration("calibration", "Efficiency table from `dayzero calibrate` for the measurements.",
                                 "FILE");
  cli.addOptions({scenario, screenshot, size, threads, measurements, device, calibration});
  cli.process(app);

  const QStringList wh = cli.value(size).split('x');
  bool ok_w = false, ok_h = false;
  const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
  if (!ok_w || !ok_h || w < 200 || h < 200) {
    std::fprintf(stderr, "dayzero-gui: --size wants WxH (at least 200x200), got %s\n", qPrintable(cli.value(size)));
    return 1;
  }
  const QString shot = cli.value(screenshot);
  if (!shot.isEmpty() && !cli.isSet(scenario) && !cli.isSet(measurements)) {
    std::fprintf(stderr, "dayzero-gui: --screenshot needs --scenario or --measurements\n");
    return 1;
  }
  if ((cli.isSet(device) || cli.isSet(calibration)) && !cli.isSet(measurements)) {
    std::fprintf(stderr, "dayzero-gui: --device and --calibration go with --measurements\n");
    return 1;
  }

  dayzero::gui::MainWindow window;
  window.runner()->setThreads(cli.value(threads).toInt());
  window.resize(w, h);
  window.show();
  if (cli.isSet(measurements)) {
    QString error;
    auto* view = window.measuredView();
    const bool ok = window.openMeasurements(cli.value(measurements), &error) &&
                    (!cli.isSet(device) || view->setDevice(cli.value(device), &error)) &&
                    (!cli.isSet(calibration) || view->setCalibration(cli.value(calibration), &error));
    if (!ok) {
      std::fprintf(stderr, "dayzero-gui: %s\n", qPrintable(error));
      return 2;
    }
  }
  auto save_and_exit = [&window, shot] {
    // Let the layouts and charts settle before rendering.
    QTimer::singleShot(300, &window, [&window, shot] {
      if (!window.grab().save(shot)) {
        std::fprintf(stderr, "dayzero-gui: cannot write %s\n", qPrintable(shot));
        QApplication::exit(1);
        return;
      }
      QApplication::exit(0);
    });
  };
  if (!shot.isEmpty() && !cli.isSet(scenario)) save_and_exit();  // --measurements alone: nothing to search
  if (!shot.isEmpty() && cli.isSet(scenario)) {
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFailed, &app, [](const QString& message) {
      std::fprintf(stderr, "dayzero-gui: %s\n", qPrintable(message));
      QApplication::exit(2);
    });
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFinished, &app, save_and_exit);
  }
  if (cli.isSet(scenario)) window.openScenario(cli.value(scenario));
  return app.exec();
}
