// bench_check: `check` on a checkpoint of ~100,000 tensors in 50 shards, the scale
// of DeepSeek-V3 (91k tensors in 163 shards). Shards are sparse files (headers
// real, data holes), so the bench measures what `check` does: header reads and
// the comparison, not disk bandwidth.
//
//   build/bench/bench_check [DIR]      (default DIR: $TMPDIR/dayzero_bench_check)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "bench_main.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

using namespace dayzero::model;
namespace fs = std::filesystem;

namespace {
// Qwen3-MoE layout with 518 experts x 64 layers: 3 * 518 * 64 expert tensors + 579
// others = 100,035 tensors, 1.3 TB of (sparse) BF16.
const char* kConfig = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 64,
  "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
  "num_experts": 518, "num_experts_per_tok": 8, "moe_intermediate_size": 1536,
  "intermediate_size": 12288, "torch_dtype": "bfloat16"})";
constexpr int kShards = 50;
constexpr int kRepeats = 5;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int run(int argc, char** argv) {
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "dayzero_bench_check";
  // The folder is emptied first: only when it is empty or an earlier run's (its marker
  // file), so that a mistyped DIR never deletes a user's files.
  const fs::path marker = dir / ".dayzero_bench_check";
  if (fs::exists(dir) && !fs::is_empty(dir) && !fs::exists(marker))
    throw std::runtime_error(dir.string() +
                             " is not empty and not an earlier bench_check's folder: give a new or empty one");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(marker) << "written by bench_check; deleted by its next run\n";
  std::ofstream(dir / "config.json") << kConfig;

  auto t0 = std::chrono::steady_clock::now();
  const Model m = load_model(dir);
  const auto specs = expected_tensors(m);
  const double t_model = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  ShardIndex index;
  int64_t total = 0;
  const size_t per_shard = (specs.size() + kShards - 1) / kShards;
  for (int s = 0; s < kShards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, kShards);
    std::vector<TensorToWrite> tensors;
    for (size_t i = s * per_shard; i < std::min(specs.size(), (s + 1) * per_shard); ++i) {
      tensors.push_back({specs[i].name, specs[i].dtype, specs[i].shape, nullptr});
      index.weight_map[specs[i].name] = name;
      total += specs[i].bytes();
    }
    write_safetensors(dir / name, tensors);
  }
  index.total_size = total;
  write_shard_index(dir / "model.safetensors.index.json", index);
  const double t_write = seconds_since(t0);

  double best = 1e9;
  CheckReport r;
  for (int i = 0; i < kRepeats; ++i) {
    t0 = std::chrono::steady_clock::now();
    r = check_checkpoint(m, dir);
    best = std::min(best, seconds_since(t0));
  }
  std::printf("checkpoint: %lld tensors in %d shards, %.1f GB (sparse), written in %.2f s\n",
              static_cast<long long>(r.tensors_found), kShards, static_cast<double>(total) / 1e9, t_write);
  std::printf("model + expected tensor list: %.3f s\n", t_model);
  std::printf("check (headers + comparison), best of %d: %.3f s  -> %s\n", kRepeats, best, r.ok() ? "OK" : "MISMATCH");
  fs::remove_all(dir);
  return r.ok() ? 0 : 1;
}

int main(int argc, char** argv) {
  return dayzero::bench::guarded_main("bench_check", [&] { return run(argc, argv); });
}
