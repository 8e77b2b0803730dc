#include "executor/weight_store.h"

#include <stdexcept>

#include "model/checkpoint.h"

namespace dayzero::executor {

WeightStore::WeightStore(const std::filesystem::path& dir, const std::set<std::string>& needed, int64_t fp8_block_rows,
                         int64_t fp8_block_cols, const model::ModelConfig* config)
    : dir_(dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw std::runtime_error("weights directory '" + dir.string() + "' does not exist");
  const fs::path single = dir / "model.safetensors", index_path = dir / "model.safetensors.index.json";
  model::ShardIndex index;
  const bool sharded = fs::exists(index_path);
  if (sharded) index = model::read_shard_index(index_path);
  else if (!fs::exists(single))
    throw std::runtime_error("weights directory '" + dir.string() +
                             "' has no model.safetensors and no model.safetensors.index.json");
  auto file_of = [&](const std::string& name) -> std::string {
    if (!sharded) return "model.safetensors";
    for (const char* suffix : {"", "_blocks", "_packed"}) {  // MXFP4 <name>_blocks; INT4 <name>_packed
      auto it = index.weight_map.find(name + suffix);
      if (it != index.weight_map.end()) return it->second;
    }
    throw std::runtime_error(index_path.string() + ": tensor '" + name + "' is in no shard");
  };
  for (const auto& name : needed) {
    const std::string stored = config ? model::checkpoint_name(*config, name) : name;
    const std::string file = file_of(stored);
    auto& f = files_[file];
    if (!f) {
      if (!fs::exists(dir / file))
        throw std::runtime_error("shard '" + (dir / file).string() + "' (holding '" + stored + "') is missing");
      f = std::make_unique<model::SafetensorsFile>(dir / file);
    }
    StoredWeight w = find_weight(*f, stored, fp8_block_rows, fp8_block_cols);
    w.name = name;
    weights_.emplace(name, std::move(w));
  }
}

const StoredWeight& WeightStore::get(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end())
    throw std::runtime_error("weight '" + name + "' is not among this rank's weights (from " + dir_.string() + ")");
  return it->second;
}

std::span<const float> WeightStore::floats(const std::string& name) {
  auto& t = floats_[name];
  if (!t) t = std::make_unique<Tensor>(dequantize(get(name)));
  return t->data;
}

void WeightStore::convert(const std::string& name, model::WeightPrecision p) {
  (void)get(name);  // throws naming a weight that was not asked for
  StoredWeight& w = weights_.at(name);
  const bool fp8 = p == model::WeightPrecision::fp8;
  if (!fp8 && p != model::WeightPrecision::bf16)
    throw std::invalid_argument("weight '" + name + "': the executor converts weights to bf16 or fp8, not " +
                                std::string(model::precision_name(p)));
  if (fp8 ? w.kind == model::StorageKind::fp8_block
          : w.kind == model::StorageKind::plain && w.dtype == model::DType::bf16)
    return;  // stored so already
  auto owned = std::make_unique<OwnedWeight>();
  if (fp8) to_fp8_block(w, *owned);
  else to_bf16(w, *owned);
  floats_.erase(name);
  w = owned->view;
  converted_[name] = std::move(owned);
}

int64_t WeightStore::converted_bytes() const {
  int64_t b = 0;
  for (const auto& [name, o] : converted_) b += o->bytes();
  return b;
}

int64_t touch_pages(std::span<const std::byte> bytes) {
  constexpr size_t kPage = 4096;  // the smallest page size of the platforms we run on
  volatile unsigned char sink = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < bytes.size(); i += kPage) sink = static_cast<unsigned char>(sink + p[i]);
  (void)sink;
  return static_cast<int64_t>(bytes.size());
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [name, w] : weights_) out.push_back(name);
  return out;
}

int64_t WeightStore::mapped_bytes() const {
  int64_t b = 0;
  for (const auto& [name, w] : weights_) b += static_cast<int64_t>(w.data.size() + w.scales.size());
  return b;
}

int64_t WeightStore::float_source_bytes() const {
  int64_t b = 0;
  for (const auto& [name, t] : floats_) {
    const StoredWeight& w = get(name);
    b += static_cast<int64_t>(w.data.size() + w.scales.size());
  }
  return b;
}

int64_t WeightStore::float_bytes() const {
  int64_t b = 0;
  for (const auto& [name, t] : floats_) b += t->numel() * static_cast<int64_t>(sizeof(float));
  return b;
}

}  // namespace dayzero::executor
