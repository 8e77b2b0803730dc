#include "model/checkpoint.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/arith.h"
#include "model/safetensors.h"

namespace dayzero::model {

int64_t TensorSpec::bytes() const { return storage_bytes(shape, StorageFormat::plain_of(dtype)); }

namespace {

std::string with_index(const std::string& pattern, int64_t e) {
  const auto pos = pattern.find("{e}");
  if (pos == std::string::npos) return pattern;
  return pattern.substr(0, pos) + std::to_string(e) + pattern.substr(pos + 3);
}

// The on-disk tensors of one copy of a weight; `model_dtype`: the checkpoint's torch_dtype
// (compressed-tensors stores INT4 group scales in it).
void expand(const Weight& w, const std::string& name, std::vector<TensorSpec>& out, DType model_dtype) {
  const auto& f = w.stored;
  const auto& s = w.shape;
  switch (f.kind) {
    case StorageKind::plain: out.push_back({name, f.dtype, s, false, &w}); return;
    case StorageKind::fp8_block: {
      out.push_back({name, DType::f8_e4m3, s, false, &w});
      std::vector<int64_t> scale(s.begin(), s.end() - 2);
      scale.push_back(core::ceil_div(s[s.size() - 2], f.block_rows));
      scale.push_back(core::ceil_div(s.back(), f.block_cols));
      out.push_back({name + "_scale_inv", DType::f32, scale, true, &w});
      return;
    }
    case StorageKind::fp8_tensor:
      out.push_back({name, DType::f8_e4m3, s, false, &w});
      out.push_back({name + "_scale", DType::f32, {}, true, &w});
      return;
    case StorageKind::mxfp4: {  // gpt-oss: [.., rows, cols] -> blocks [.., rows, cols/32, 16], scales [.., rows,
                                // cols/32]
      std::vector<int64_t> blocks(s.begin(), s.end() - 1);
      blocks.push_back(core::ceil_div(s.back(), kMxfp4BlockElems));
      std::vector<int64_t> scales = blocks;
      blocks.push_back(kMxfp4BlockElems / 2);
      out.push_back({name + "_blocks", DType::u8, blocks, false, &w});
      out.push_back({name + "_scales", DType::u8, scales, true, &w});
      return;
    }
    case StorageKind::int4_group: {  // compressed-tensors pack-quantized: `name`_packed / _scale / _shape
      if (s.size() != 2) break;
      out.push_back({name + "_packed", DType::i32, {s[0], core::ceil_div(s[1], int64_t{8})}, false, &w});
      out.push_back({name + "_scale", model_dtype, {s[0], s[1] / f.group}, true, &w});
      out.push_back({name + "_shape", DType::i64, {2}, true, &w});
      return;
    }
    case StorageKind::int8_channel:
    case StorageKind::nvfp4: break;  // not checkpoint formats DayZero reads
  }
  out.push_back({name, f.dtype, s, false, &w});
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::string checkpoint_name(const ModelConfig& c, const std::string& logical) {
  if (logical.rfind("model.", 0) == 0) return c.naming.text + logical.substr(6);
  if (logical.rfind("lm_head.", 0) == 0) return c.naming.head + logical;
  return logical;  // e.g. Qwen3.5's "mtp." layers, stored at the top in the wrapper too
}

bool other_modality(const ModelConfig& c, const std::string& tensor) {
  for (const auto& p : c.naming.other_prefixes)
    if (tensor.rfind(p, 0) == 0) return true;
  return false;
}

std::vector<TensorSpec> expected_tensors(const Model& m) {
  std::vector<TensorSpec> out;
  for (const auto& w : m.weights) {
    if (w.name.find("{e}") == std::string::npos) {
      expand(w, checkpoint_name(m.config, w.name), out, m.config.torch_dtype);
    } else {
      for (int64_t e = 0; e < w.copies; ++e)
        expand(w, checkpoint_name(m.config, with_index(w.name, e)), out, m.config.torch_dtype);
    }
  }
  return out;
}

bool CheckReport::ok() const {
  return missing.empty() && unexpected.empty() && misshaped.empty() && wrong_dtype.empty() && file_errors.empty();
}

namespace {

// Which shards to read: the index's, or the single model.safetensors. Problems
// with the index go to r.file_errors.
std::vector<std::string> shards_of(const std::filesystem::path& dir, std::optional<ShardIndex>& index, CheckReport& r) {
  std::vector<std::string> shards;
  const auto index_path = dir / "model.safetensors.index.json";
  std::error_code ec;
  if (std::filesystem::exists(index_path, ec)) {
    try {
      index = read_shard_index(index_path);
      std::set<std::string> files;
      for (const auto& [name, shard] : index->weight_map) files.insert(shard);
      shards.assign(files.begin(), files.end());
    } catch (const SafetensorsError& e) {
      r.file_errors.push_back(e.what());
    }
  } else if (std::filesystem::exists(dir / "model.safetensors", ec)) {
    shards.push_back("model.safetensors");
  } else {
    r.file_errors.push_back((dir / "model.safetensors").string() +
                            ": no model.safetensors and no model.safetensors.index.json");
  }
  return shards;
}

// The index against what the shards hold: every mapped tensor found in its shard,
// and metadata.total_size equal to the tensors' bytes.
void check_index(const std::filesystem::path& dir, const ShardIndex& index, const std::set<std::string>& found,
                 const std::set<std::string>& read_ok, int64_t total_bytes, CheckReport& r) {
  const auto index_path = dir / "model.safetensors.index.json";
  for (const auto& [name, shard] : index.weight_map)
    if (!found.count(name) && read_ok.count(shard))
      r.file_errors.push_back(index_path.string() + ": weight_map puts '" + name + "' in " + shard +
                              ", which does not hold it");
  if (index.total_size && r.file_errors.empty() && *index.total_size != total_bytes)
    r.file_errors.push_back(index_path.string() + ": metadata.total_size " + std::to_string(*index.total_size) +
                            " differs from the shards' tensor bytes " + std::to_string(total_bytes));
}

}  // namespace

CheckReport check_checkpoint(const Model& m, const std::filesystem::path& dir) {
  CheckReport r;
  const auto expected = expected_tensors(m);
  r.tensors_expected = static_cast<int64_t>(expected.size());
  std::unordered_map<std::string, const TensorSpec*> by_name;
  for (const auto& t : expected) {
    by_name.emplace(t.name, &t);
    r.expected_bytes_by_dtype[std::string(dtype_name(t.dtype))] += t.bytes();
  }
  std::optional<ShardIndex> index;
  const std::vector<std::string> shards = shards_of(dir, index, r);
  r.shards = static_cast<int64_t>(shards.size());

  std::set<std::string> found, read_ok;
  int64_t total_bytes = 0;
  for (const auto& shard : shards) {
    SafetensorsHeader h;
    try {
      h = read_safetensors_header(dir / shard);
    } catch (const SafetensorsError& e) {
      r.file_errors.push_back(e.what());
      continue;
    }
    read_ok.insert(shard);
    for (const auto& t : h.tensors) {
      if (!by_name.count(t.name) && other_modality(m.config, t.name)) {  // not the text model's: counted apart
        ++r.other_modality_tensors;
        r.other_modality_bytes += t.bytes();
        continue;
      }
      ++r.tensors_found;
      total_bytes += t.bytes();
      r.found_bytes_by_dtype[std::string(dtype_name(t.dtype))] += t.bytes();
      if (!found.insert(t.name).second) {
        r.file_errors.push_back((dir / shard).string() + ": tensor '" + t.name + "' is also in another shard");
        continue;
      }
      if (index) {
        const auto it = index->weight_map.find(t.name);
        if (it == index->weight_map.end())
          r.file_errors.push_back((dir / shard).string() + ": tensor '" + t.name +
                                  "' is not in the index's weight_map");
        else if (it->second != shard)
          r.file_errors.push_back((dir / shard).string() + ": tensor '" + t.name + "' is mapped to " + it->second);
      }
      const auto e = by_name.find(t.name);
      if (e == by_name.end()) {
        r.unexpected.push_back(t.name);
        continue;
      }
      if (e->second->shape != t.shape)
        r.misshaped.push_back({t.name, shape_str(e->second->shape), shape_str(t.shape), shard});
      if (e->second->dtype != t.dtype)
        r.wrong_dtype.push_back(
            {t.name, std::string(dtype_name(e->second->dtype)), std::string(dtype_name(t.dtype)), shard});
    }
  }
  if (index) check_index(dir, *index, found, read_ok, total_bytes, r);
  for (const auto& t : expected)
    if (!found.count(t.name)) r.missing.push_back(t.name);
  return r;
}

}  // namespace dayzero::model
