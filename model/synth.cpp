#include "model/synth.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_fields.h"
#include "model/checkpoint.h"
#include "model/random.h"
#include "model/safetensors.h"

namespace dayzero::model {

namespace {

uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL ^ seed;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Uniform in [-1, 1).
double unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0; }

constexpr double kWeightStd = 0.02;                            // GPT-2 / Llama initializer_range
const double kUniformHalfWidth = kWeightStd * std::sqrt(3.0);  // uniform with that std

uint16_t to_bf16(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);  // round to nearest even
}

// One element's bytes for a tensor spec.
struct Filler {
  DType dtype;
  bool norm;   // RMSNorm weight: values near 1
  bool scale;  // quantization scale
  uint64_t key;

  double value(int64_t i) const {
    const double u = unit(splitmix64(key + static_cast<uint64_t>(i)));
    return norm ? 1.0 + 0.1 * u : kUniformHalfWidth * u;
  }

  void operator()(int64_t offset, std::span<std::byte> out) const {
    const int64_t esize = dtype_bits(dtype) / 8;
    for (size_t b = 0; b < out.size();) {
      const int64_t i = (offset + static_cast<int64_t>(b)) / esize;
      const uint64_t r = splitmix64(key + static_cast<uint64_t>(i));
      unsigned char bytes[8] = {};
      switch (dtype) {
        case DType::f32: {
          // FP8 scale_inv: dequantized weights land near std 0.02 (codes up to ~2).
          const float f = scale ? 0.01f : static_cast<float>(value(i));
          std::memcpy(bytes, &f, 4);
          break;
        }
        case DType::bf16:
        case DType::f16: {
          const uint16_t h = to_bf16(static_cast<float>(value(i)));
          std::memcpy(bytes, &h, 2);
          break;
        }
        case DType::f8_e4m3: {  // sign, exponent 4..8 of bias 7 (2^-3..2^1), any mantissa: never NaN
          const auto e = static_cast<unsigned char>(4 + r % 5);
          bytes[0] = static_cast<unsigned char>(((r >> 8) & 1) << 7 | e << 3 | ((r >> 16) & 7));
          break;
        }
        case DType::u8:  // MXFP4: any E2M1 nibble pair is valid; E8M0 scales 2^-7..2^-4
          bytes[0] = scale ? static_cast<unsigned char>(120 + r % 4) : static_cast<unsigned char>(r & 0xff);
          break;
        case DType::boolean:  // integer and other tensors stay zero
        case DType::f4:
        case DType::f6_e2m3:
        case DType::f6_e3m2:
        case DType::i8:
        case DType::f8_e5m2:
        case DType::f8_e8m0:
        case DType::f8_e4m3fnuz:
        case DType::f8_e5m2fnuz:
        case DType::i16:
        case DType::u16:
        case DType::i32:
        case DType::u32:
        case DType::c64:
        case DType::f64:
        case DType::i64:
        case DType::u64: break;
      }
      const size_t take =
          std::min(out.size() - b, static_cast<size_t>(esize - (offset + static_cast<int64_t>(b)) % esize));
      std::memcpy(out.data() + b, bytes + (offset + static_cast<int64_t>(b)) % esize, take);
      b += take;
    }
  }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The source config.json with its layer count cut to `layers`, and its MTP layers
// dropped when asked (a decode bench that does not draft need not write them: one
// DeepSeek-V3 MTP layer is 11 GB of its 256 experts).
nlohmann::json truncated_config(const std::filesystem::path& config_path, int64_t layers, bool drop_mtp) {
  nlohmann::json j = core::parse_json_text(core::read_input_file(config_path), config_path.string());
  nlohmann::json& t = j.contains("text_config") ? j["text_config"] : j;
  if (drop_mtp) {  // the key the family reads (DeepSeek-V3's default is 1 when absent)
    bool set = false;
    for (const char* key : {"num_nextn_predict_layers", "mtp_num_hidden_layers"})
      if (t.contains(key)) {
        t[key] = 0;
        set = true;
      }
    if (!set) t["num_nextn_predict_layers"] = 0;
  }
  if (layers > 0) {
    t["num_hidden_layers"] = layers;
    if (t.contains("layer_types") && t["layer_types"].is_array()) {
      auto& lt = t["layer_types"];
      lt.erase(lt.begin() + std::min<int64_t>(layers, static_cast<int64_t>(lt.size())), lt.end());
    }
    if (t.contains("mlp_only_layers") && t["mlp_only_layers"].is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& l : t["mlp_only_layers"])
        if (l.is_number_integer() && l.get<int64_t>() < layers) kept.push_back(l);
      t["mlp_only_layers"] = kept;
    }
  }
  return j;
}

std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

}  // namespace

SynthResult write_synthetic_checkpoint(const std::filesystem::path& config_path, const std::filesystem::path& out_dir,
                                       const SynthOptions& opts) {
  const std::filesystem::path cfg_file =
      std::filesystem::is_directory(config_path) ? config_path / "config.json" : config_path;
  ModelConfig original = load_config(cfg_file);  // validates before anything is written
  if (opts.layers > original.num_layers)
    throw core::InputError(cfg_file.string(), "num_hidden_layers", std::to_string(original.num_layers),
                           "--layers " + std::to_string(opts.layers) + " exceeds the model's layer count");
  const nlohmann::json cfg = truncated_config(cfg_file, opts.layers, opts.drop_mtp);
  const Model m = build_model(parse_config(cfg.dump(), cfg_file.string()));
  const auto specs = expected_tensors(m);

  std::filesystem::create_directories(out_dir);
  SynthResult result;
  // Greedy sharding in checkpoint order, as huggingface_hub does.
  std::vector<std::vector<const TensorSpec*>> shards(1);
  int64_t in_shard = 0;
  for (const auto& t : specs) {
    if (in_shard > 0 && in_shard + t.bytes() > opts.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += t.bytes();
    result.bytes += t.bytes();
  }
  result.tensors = static_cast<int64_t>(specs.size());

  ShardIndex index;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shards.size() == 1 ? "model.safetensors" : shard_name(s, shards.size());
    std::vector<TensorToWrite> tensors;
    for (const TensorSpec* t : shards[s]) {
      const bool norm = ends_with(t->name, "norm.weight");
      tensors.push_back({t->name, t->dtype, t->shape, Filler{t->dtype, norm, t->scale, hash_name(t->name, opts.seed)}});
      index.weight_map[t->name] = file;
    }
    write_safetensors(out_dir / file, tensors);
    result.files.push_back(out_dir / file);
  }
  if (shards.size() > 1) {
    index.total_size = result.bytes;
    write_shard_index(out_dir / "model.safetensors.index.json", index);
    result.files.push_back(out_dir / "model.safetensors.index.json");
  }
  const auto cfg_tmp = out_dir / "config.json.tmp";
  {
    std::ofstream out(cfg_tmp, std::ios::trunc);
    out << cfg.dump(2) << '\n';
    if (!out.flush()) throw core::InputError(cfg_tmp.string(), "", "", "write failed");
  }
  std::filesystem::rename(cfg_tmp, out_dir / "config.json");
  return result;
}

}  // namespace dayzero::model
