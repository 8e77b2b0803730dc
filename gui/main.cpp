// dayzero-gui [--scenario S] [--measurements M.json [--device D] [--calibration C.json]]
//             [--screenshot out.png [--size WxH]] [--threads N]
// dayzero-gui --render-sweep SWEEP.json --out CHART.png [--size WxH]
// dayzero-gui --render-report SCENARIO --out DIR:
// the desktop app. With --screenshot it opens the window at that size, runs the
// search (or, with --measurements alone, shows predicted against measured),
// selects the top plan, saves the rendered window and exits (for docs and tests;
// works under QT_QPA_PLATFORM=offscreen). With --render-sweep it draws a sweep
// (`dayzero sweep`'s JSON) as the Curves tab does, saves it and exits; with
// --render-report, the charts of `dayzero report` (gui/report_charts.h).
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>

#include <nlohmann/json.hpp>
#include "gui/main_window.h"

#include "core/json_fields.h"
#include "gui/measured_view.h"
#include "gui/report_charts.h"
#include "gui/sweep_chart.h"

namespace {

// The command line's options, in one place so that each mode below reads the ones it needs.
struct GuiOptions {
  QCommandLineOption scenario{"scenario", "Scenario JSON file, or the name of a bundled scenario.", "S"};
  QCommandLineOption screenshot{"screenshot", "Run the search, save the window as PNG to FILE and exit.", "FILE"};
  QCommandLineOption size{"size", "Window size, e.g. 1600x1000.", "WxH", "1600x1000"};
  QCommandLineOption threads{"threads", "Search threads (default: every core).", "N", "0"};
  QCommandLineOption measurements{"measurements", "Measurements JSON from `dayzero run`: predicted against measured.",
                                  "FILE"};
  QCommandLineOption device{"device", "Catalog device to predict the measurements on (default: cpu-host).", "NAME"};
  QCommandLineOption calibration{"calibration", "Efficiency table from `dayzero calibrate` for the measurements.",
                                 "FILE"};
  QCommandLineOption render_sweep{"render-sweep", "Draw a sweep JSON from `dayzero sweep` (with --out) and exit.",
                                  "FILE"};
  QCommandLineOption render_report{
      "render-report", "Draw the report charts of a scenario (memory.png, pareto.png) into --out DIR and exit.",
      "SCENARIO"};
  QCommandLineOption engine{"engine", "With --render-report: the engine the curves are served with.", "NAME", ""};
  QCommandLineOption out{"out", "With --render-sweep: the PNG file to write; with --render-report: the directory.",
                         "FILE"};
};

// --render-report: the report's charts into --out DIR; the process's exit status.
int render_report(const QCommandLineParser& cli, const GuiOptions& o) {
  QString error;
  if (!cli.isSet(o.out) ||
      !dayzero::gui::render_report_pngs(cli.value(o.render_report), cli.value(o.engine), cli.value(o.out), &error)) {
    std::fprintf(stderr, "dayzero-gui: %s\n", cli.isSet(o.out) ? qPrintable(error) : "--render-report needs --out DIR");
    return 1;
  }
  return 0;
}

// --render-sweep: the sweep's chart as --out FILE.png, at --size if given (w x h);
// the process's exit status.
int render_sweep(const QCommandLineParser& cli, const GuiOptions& o, int w, int h) {
  if (!cli.isSet(o.out)) {
    std::fprintf(stderr, "dayzero-gui: --render-sweep needs --out FILE.png\n");
    return 1;
  }
  try {
    const std::string file = cli.value(o.render_sweep).toStdString();
    const dayzero::serve::Sweep sweep = dayzero::serve::sweep_from_json(dayzero::core::read_json_file(file), file);
    QString error;
    if (!dayzero::gui::render_sweep_png(sweep, cli.value(o.out), cli.isSet(o.size) ? w : 1800,
                                        cli.isSet(o.size) ? h : 540, &error)) {
      std::fprintf(stderr, "dayzero-gui: %s\n", qPrintable(error));
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dayzero-gui: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The window, w x h, with the scenario searched and the measurements shown as asked;
// with --screenshot, saved once it has settled. The process's exit status.
int run_window(QApplication& app, const QCommandLineParser& cli, const GuiOptions& o, int w, int h) {
  const QString shot = cli.value(o.screenshot);
  if (!shot.isEmpty() && !cli.isSet(o.scenario) && !cli.isSet(o.measurements)) {
    std::fprintf(stderr, "dayzero-gui: --screenshot needs --scenario or --measurements\n");
    return 1;
  }
  if ((cli.isSet(o.device) || cli.isSet(o.calibration)) && !cli.isSet(o.measurements)) {
    std::fprintf(stderr, "dayzero-gui: --device and --calibration go with --measurements\n");
    return 1;
  }

  dayzero::gui::MainWindow window;
  window.runner()->setThreads(cli.value(o.threads).toInt());
  window.resize(w, h);
  window.show();
  if (cli.isSet(o.measurements)) {
    QString error;
    auto* view = window.measuredView();
    const bool ok = window.openMeasurements(cli.value(o.measurements), &error) &&
                    (!cli.isSet(o.device) || view->setDevice(cli.value(o.device), &error)) &&
                    (!cli.isSet(o.calibration) || view->setCalibration(cli.value(o.calibration), &error));
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
  if (!shot.isEmpty() && !cli.isSet(o.scenario)) save_and_exit();  // --measurements alone: nothing to search
  if (!shot.isEmpty() && cli.isSet(o.scenario)) {
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFailed, &app, [](const QString& message) {
      std::fprintf(stderr, "dayzero-gui: %s\n", qPrintable(message));
      QApplication::exit(2);
    });
    QObject::connect(&window, &dayzero::gui::MainWindow::searchFinished, &app, save_and_exit);
  }
  if (cli.isSet(o.scenario)) window.openScenario(cli.value(o.scenario));
  return app.exec();
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("dayzero-gui");
  QApplication::setApplicationVersion("0.1.0");
  QCommandLineParser cli;
  cli.setApplicationDescription("DayZero: explore the plans for serving a large model on a cluster.");
  cli.addHelpOption();
  const GuiOptions o;
  cli.addOptions({o.scenario, o.screenshot, o.size, o.threads, o.measurements, o.device, o.calibration, o.render_sweep,
                  o.render_report, o.engine, o.out});
  cli.process(app);

  const QStringList wh = cli.value(o.size).split('x');
  bool ok_w = false, ok_h = false;
  const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
  if (!ok_w || !ok_h || w < 200 || h < 200) {
    std::fprintf(stderr, "dayzero-gui: --size wants WxH (at least 200x200), got %s\n", qPrintable(cli.value(o.size)));
    return 1;
  }
  if (cli.isSet(o.render_report)) return render_report(cli, o);
  if (cli.isSet(o.render_sweep)) return render_sweep(cli, o, w, h);
  return run_window(app, cli, o, w, h);
}
