// dayzero-gui as an offscreen chart renderer (gui_render.h).
#include "cli/gui_render.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace dayzero::cli {

bool draw_with_gui(const std::vector<std::string>& args, const std::string& what) {
  std::error_code ec;
  const auto gui = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "dayzero-gui";
  if (ec || !std::filesystem::exists(gui)) {
    std::cerr << what << " not drawn: this build has no dayzero-gui (Qt 6 was not found)\n";
    return false;
  }
  std::vector<std::string> words = {gui.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = {"QT_QPA_PLATFORM=offscreen"};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("QT_QPA_PLATFORM=", 0) != 0) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Qt's own notes (runtime directory, window hints) go to a log shown only on failure.
  const auto log = std::filesystem::temp_directory_path() / ("dayzero-gui-" + std::to_string(::getpid()) + ".log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, words.front().c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  const bool ok = spawned == 0 && waitpid(pid, &status, 0) >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::ifstream in_log(log);
  const std::string notes((std::istreambuf_iterator<char>(in_log)), std::istreambuf_iterator<char>());
  std::filesystem::remove(log, ec);
  if (!ok) throw std::runtime_error(what + ": " + words.front() + " failed" + (notes.empty() ? "" : ": " + notes));
  return true;
}

}  // namespace dayzero::cli
