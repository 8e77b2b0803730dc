#include "executor/measurements.h"

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "simulate/plan_json.h"

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

double bus_factor(const std::string& collective, int ranks) {
  // nccl-tests doc/PERFORMANCE.md, "Bus bandwidth": the factor that makes busbw
  // comparable to the hardware's link bandwidth whatever the rank count.
  const double n = ranks;
  if (ranks < 1) throw std::invalid_argument("bus_factor: ranks must be >= 1, not " + std::to_string(ranks));
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall") return (n - 1) / n;
  if (collective == "sendrecv") return 1;
  throw std::invalid_argument("bus_factor: unknown collective '" + collective + "'");
}

nlohmann::json collective_to_json(const CollectiveMeasurement& c) {
  return {{"collective", c.collective},
          {"ranks", c.ranks},
          {"size_bytes", c.size_bytes},
          {"calls", c.calls},
          {"warmup_iterations", c.iterations > 0 ? 1 : 0},
          {"iterations", c.iterations},
          {"mean_s", c.mean_s},
          {"min_s", c.min_s},
          {"bus_factor", bus_factor(c.collective, c.ranks)},
          {"algbw_GBps", c.algbw_GBps()},
          {"busbw_GBps", c.busbw_GBps()}};
}

double Measurements::decode_step_mean_s() const {
  if (decode_step_s.empty()) return 0;
  return std::accumulate(decode_step_s.begin(), decode_step_s.end(), 0.0) / static_cast<double>(decode_step_s.size());
}

OpMeasurement* OpTimer::note(const OpKey& key) {
  const std::string id = phase_ + "|" + key.op->name + "|" + key.variant + "|" + shape_string(key.shape);
  auto [it, fresh] = ops_.try_emplace(id);
  OpMeasurement& m = it->second;
  ++m.calls;
  if (!fresh) return nullptr;
  order_.push_back(id);
  m.phase = phase_;
  m.name = key.op->name;
  m.kind = std::string(model::op_kind_name(key.op->kind));
  m.variant = key.variant;
  m.shape = key.shape;
  m.cost = key.cost;
  return iterations_ > 0 ? &m : nullptr;
}

std::vector<OpMeasurement> OpTimer::results() const {
  std::vector<OpMeasurement> out;
  for (const auto& id : order_) out.push_back(ops_.at(id));
  return out;
}

nlohmann::json measurements_to_json(const Measurements& m) {
  using nlohmann::json;
  json collectives = json::array();
  for (const auto& c : m.collectives) collectives.push_back(collective_to_json(c));
  json ops = json::array();
  for (const auto& o : m.ops)
    ops.push_back({{"phase", o.phase}, {"name", o.name}, {"kind", o.kind}, {"variant", o.variant},
                   {"shape", o.shape}, {"calls", o.calls}, {"warmup_iterations", o.iterations > 0 ? 1 : 0},
                   {"iterations", o.iterations}, {"mean_s", o.mean_s}, {"min_s", o.min_s}, {"flops", o.cost.flops},
                   {"bytes", o.cost.bytes}, {"gflops_per_s", o.gflops()}, {"gbytes_per_s", o.gbps()}});
  return {
      {"schema_version", m.schema_version},
      {"model", m.model},
      {"weights", m.weights},
      {"rank", m.rank},
      {"world_size", m.world_size},
      {"prompt", m.prompt},
      {"tokens", m.tokens},
      {"prefill_s", m.prefill_s},
      {"decode_step_s", m.decode_step_s},
      {"decode_step_mean_s", m.decode_step_mean_s()},
      {"peak_bytes", m.memory.peak_bytes()},
      {"memory",
       {{"weights_bytes", m.memory.weights_bytes},
        {"kv_bytes", m.memory.kv_bytes},
        {"workspace_bytes", m.memory.workspace_bytes},
        {"peak_bytes", m.memory.peak_bytes()},
        {"peak_bytes_source", "weights + KV cache + largest activation the runner allocated"},
        {"rss_hwm_bytes", m.memory.rss_hwm_bytes}}},
      {"collectives", collectives},  // none on one rank
      {"plan", simulate::plan_to_json(m.plan)},
      {"machine", {{"hostname", m.machine.hostname}, {"cpu_model", m.machine.cpu_model}, {"cores", m.machine.cores}}},
      {"timing", {{"warmup_iterations", m.timing_iterations > 0 ? 1 : 0}, {"iterations", m.timing_iterations},
                  {"method", "per distinct (phase, op, variant, shape): the real call is the untimed warm-up, then "
                             "`iterations` timed repeats; mean and min; GFLOP/s and GB/s from min; collectives per distinct (collective, ranks, "
                             "size_bytes) the same way on a scratch buffer, algbw = size_bytes / min_s, busbw = algbw "
                             "x bus_factor (nccl-tests doc/PERFORMANCE.md)"}}},
      {"notes", "CPU backend: weights as the checkpoint stores them, computed in float32 (plan dtypes recorded, not "
                "applied); KV cache float32"},
      {"ops", ops},
  };
}

void save_measurements(const std::filesystem::path& file, const Measurements& m) {
  namespace fs = std::filesystem;
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write measurements to '" + tmp.string() + "'");
    out << measurements_to_json(m).dump(2) << '\n';
    if (!out.flush()) throw std::runtime_error("cannot write measurements to '" + tmp.string() + "'");
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp);
    throw std::runtime_error("cannot write measurements to '" + file.string() + "': " + ec.message());
  }
}

}  // namespace dayzero::executor
