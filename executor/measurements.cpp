#include "executor/measurements.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

namespace dayzero::executor {

MachineInfo this_machine() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) m.hostname = host;
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  return m;
}

int64_t rss_peak_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   1234 kB"
  return 0;
}

int64_t rss_current_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmRSS:   1234 kB"
  return 0;
}

int64_t program_resident_bytes() {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || exe.empty()) return 0;
  std::ifstream in("/proc/self/smaps");
  int64_t kb = 0;
  bool ours = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Rss:", 0) == 0) {
      if (ours) kb += std::stoll(line.substr(4));  // "Rss:   1234 kB"
    } else if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
               line.find('-') < line.find(' ')) {  // a mapping's header: "start-end perms offset dev inode path"
      std::istringstream fields(line);
      std::string range, perms, offset, dev, inode, path;
      fields >> range >> perms >> offset >> dev >> inode;
      std::getline(fields >> std::ws, path);
      ours = path == exe;
    }
  }
  return kb * 1024;
}

OpMeasurement* OpTimer::note(const OpKey& key) {
  const std::string id = phase_ + "|" + key.op->name + "|" + key.variant + "|" + shape_string(key.shape);
  auto [it, fresh] = ops_.try_emplace(id);
  OpMeasurement& m = it->second;
  last_ = &m;
  ++m.calls;
  if (!fresh) return nullptr;
  order_.push_back(id);
  m.phase = phase_;
  m.name = key.op->name;
  m.kind = std::string(model::op_kind_name(key.op->kind));
  m.variant = key.variant;
  m.shape = key.shape;
  m.flops = key.cost.flops;
  m.bytes = key.cost.bytes;
  return iterations_ > 0 ? &m : nullptr;
}

std::vector<OpMeasurement> OpTimer::results() const {
  std::vector<OpMeasurement> out;
  for (const auto& id : order_) out.push_back(ops_.at(id));
  return out;
}

}  // namespace dayzero::executor
