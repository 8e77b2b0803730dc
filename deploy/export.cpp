// export_launch (launch.h): the workers placed once, then the engine's own emitter.
#include "core/json_fields.h"
#include "deploy/worker.h"

namespace dayzero::deploy {

std::string hf_id_of(const std::filesystem::path& data_dir, const std::string& model_path) {
  namespace fs = std::filesystem;
  fs::path p(model_path);
  if (p.filename() == "config.json") p = p.parent_path();
  const std::string folder = p.filename().string();
  const fs::path ids = data_dir / "models" / "hf_ids.json";
  if (folder.empty() || !fs::exists(ids)) return "";
  const nlohmann::json j = core::read_json_file(ids);
  if (!j.contains("models") || !j["models"].is_object()) return "";
  for (const auto& [id, name] : j["models"].items())
    if (name.is_string() && name.get<std::string>() == folder) return id;  // the first: the folder's own repo
  return "";
}

std::string bundled_model_of(const std::filesystem::path& data_dir, const std::string& hf_id) {
  const std::filesystem::path ids = data_dir / "models" / "hf_ids.json";
  if (hf_id.empty() || !std::filesystem::exists(ids)) return "";
  const nlohmann::json j = core::read_json_file(ids);
  if (!j.contains("models") || !j["models"].is_object() || !j["models"].contains(hf_id)) return "";
  const nlohmann::json& name = j["models"][hf_id];
  return name.is_string() ? (data_dir / "models" / name.get<std::string>()).string() : "";
}

Launch export_launch(plan::Engine e, const plan::Plan& p, const model::Model& m, const topology::Cluster& c,
                     const plan::EngineSettings& s, const ExportOptions& o, const EngineArgs& args) {
  if (args.engine() != e) throw std::invalid_argument("the argument list given is not the engine's");
  detail::Context ctx;
  ctx.engine = e;
  ctx.plan = &p;
  ctx.model = &m;
  ctx.cluster = &c;
  ctx.settings = &s;
  ctx.options = &o;
  ctx.model_id = o.model_id;
  if (ctx.model_id.empty())
    throw std::invalid_argument(
        "the engine needs the model's id or path: give --model-id (a Hugging Face id or a "
        "local checkpoint directory)");
  if (p.devices_used() > static_cast<int64_t>(c.num_devices()))
    throw std::invalid_argument("the plan needs " + std::to_string(p.devices_used()) + " GPUs, the cluster " +
                                c.name() + " has " + std::to_string(c.num_devices()));
  const std::vector<detail::Worker> workers = detail::place_workers(ctx);
  Launch out;
  out.engine = e;
  out.engine_version = args.version();
  switch (e) {
    case plan::Engine::vllm: detail::emit_vllm(ctx, workers, out); break;
    case plan::Engine::sglang: detail::emit_sglang(ctx, workers, out); break;
    case plan::Engine::trtllm: detail::emit_trtllm(ctx, workers, out); break;
  }
  check_launch(out, args);
  return out;
}

}  // namespace dayzero::deploy
