// dayzero inspect PATH [--json]: what a model is, from its config.json alone.
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "model/model.h"
#include "model/model_json.h"

namespace dayzero::cli {

namespace {
using model::Model;

// Bundled model inspected by `dayzero` with no arguments.
constexpr const char* kDefaultModel = "DeepSeek-V3";

void print_ops(std::ostream& out, const model::Layer& l) {
  out << "\nOps of layer " << l.index << " (" << (l.moe ? "MoE" : "dense")
      << (l.attention == model::LayerAttention::sliding ? ", sliding-window attention" : "")
      << "); FLOPs and activation bytes per token (BF16 activations)\n";
  out << "  " << pad_right("op", 28) << pad_right("kind", 12) << pad_left("n x k", 22) << pad_left("params", 16)
      << pad_left("weight bytes", 16) << pad_left("MFLOP/token", 13) << pad_left("act B/token", 13) << '\n';
  for (const auto& op : l.ops) {
    const bool gemm =
        op.kind == model::OpKind::gemm || op.kind == model::OpKind::router || op.kind == model::OpKind::expert_gemm;
    std::string shape = gemm ? std::to_string(op.n) + " x " + std::to_string(op.k) : std::to_string(op.n);
    if (op.heads > 0)
      shape = std::to_string(op.heads) + " x " + std::to_string(op.n / (op.kind == model::OpKind::rope ? op.heads : 1));
    if (op.kind == model::OpKind::expert_gemm)
      shape = std::to_string(op.active_experts) + "/" + std::to_string(op.experts) + " x " + shape;
    std::string flops = fixed(static_cast<double>(op.flops_per_token()) / 1e6, 3);
    if (op.kind == model::OpKind::attention) {
      flops = fixed(static_cast<double>(op.attn.flops_per_ctx_token()) / 1e6, 3) + "/ctx";
      shape = std::to_string(op.attn.heads) + "h/" + std::to_string(op.attn.kv_heads) + "kv x " +
              std::to_string(op.attn.qk_head_dim);
    }
    out << "  " << pad_right(op.name, 28) << pad_right(std::string(model::op_kind_name(op.kind)), 12)
        << pad_left(shape, 22) << pad_left(with_commas(op.params), 16) << pad_left(with_commas(op.weight_bytes), 16)
        << pad_left(flops, 13) << pad_left(with_commas(op.activation_bytes_per_token()), 13) << '\n';
  }
}

// KV cache per token by layer kind, the indexer's keys, the linear-attention state.
void print_cache(std::ostream& out, const Model& m) {
  const auto& c = m.config;
  const int64_t linear = m.layers_of(model::LayerAttention::linear);
  if (linear > 0)
    out << "\nKV cache per token of context, the " << c.num_layers - linear << " attention layers (the " << linear
        << " linear-attention layers cache nothing per token)\n";
  else out << "\nKV cache per token of context, all " << c.num_layers << " layers\n";
  out << "  bf16  " << with_commas(m.kv_bytes_per_token(2)) << " bytes\n";
  out << "  fp8   " << with_commas(m.kv_bytes_per_token(1)) << " bytes\n";
  if (c.indexer.heads > 0)
    out << "  + sparse-attention indexer keys " << with_commas(m.indexer_bytes_per_token())
        << " bytes (FP8 + F32 scale, any KV dtype); attention reads at most " << c.indexer.topk
        << " tokens per query\n";
  if (linear > 0)
    out << "Linear-attention state per sequence, " << linear
        << " layers, any length: " << with_commas(m.linear_state_bytes_per_seq(2)) << " bytes ("
        << gb_and_gib(m.linear_state_bytes_per_seq(2)) << "; recurrent state in "
        << model::dtype_name(c.linear.state_dtype) << ", conv window in bf16)\n";
  if (linear > 0) {  // what the linear-attention layers save on a long request
    constexpr int64_t kLong = 131072;
    const int64_t kv = m.kv_cache_bytes(kLong, 2), state = m.linear_state_bytes_per_seq(2);
    const int64_t full = m.kv_bytes_per_token(2) / (c.num_layers - linear) * c.num_layers * kLong;
    out << "  one 128K-token request at bf16: KV " << gb_and_gib(kv) << " + state " << gb_and_gib(state)
        << "; with attention in all " << c.num_layers << " layers its KV would be " << gb_and_gib(full) << "\n";
  }
  if (c.sliding_window > 0)
    out << "  (sliding layers stop growing at " << c.sliding_window
        << " tokens: 128k context at bf16 = " << gb_and_gib(m.kv_cache_bytes(131072, 2)) << ")\n";
}

void print_summary(std::ostream& out, const Model& m) {
  const auto& c = m.config;
  int64_t moe_layers = 0;
  for (int64_t i = 0; i < c.num_layers; ++i) moe_layers += c.is_moe_layer(i) ? 1 : 0;
  out << c.display_family() << " (" << c.architecture << ") from " << c.source << "\n\n";
  out << "  layers        " << c.num_layers;
  if (c.is_moe()) out << " (" << c.num_layers - moe_layers << " dense, " << moe_layers << " MoE)";
  if (c.mtp_layers > 0) out << " + " << c.mtp_layers << " MTP module(s)";
  out << "\n  hidden        " << c.hidden_size << ", vocab " << with_commas(c.vocab_size)
      << (c.tie_word_embeddings ? ", head tied to embedding" : "") << '\n';
  if (c.attention == model::AttentionKind::mla) {
    out << "  attention     MLA, " << c.num_heads << " heads, q_lora " << c.mla.q_lora_rank << ", kv_lora "
        << c.mla.kv_lora_rank << ", qk " << c.mla.qk_nope_head_dim << "+" << c.mla.qk_rope_head_dim << ", v "
        << c.mla.v_head_dim << '\n';
  } else {
    out << "  attention     " << c.num_heads << " heads, " << c.num_kv_heads << " KV heads, head dim " << c.head_dim;
    if (c.sliding_window > 0) {
      const auto sliding =
          std::count(c.layer_attention.begin(), c.layer_attention.end(), model::LayerAttention::sliding);
      out << ", sliding window " << c.sliding_window << " on " << sliding << " of " << c.num_layers << " layers";
    }
    if (c.attention_sinks) out << ", sinks";
    out << '\n';
  }
  if (c.is_moe()) {
    out << "  experts       " << c.moe.num_experts << " routed, top-" << c.moe.experts_per_token;
    if (c.moe.n_group > 1) out << " (from " << c.moe.topk_group << " of " << c.moe.n_group << " groups)";
    if (c.moe.num_shared_experts > 0) out << ", " << c.moe.num_shared_experts << " shared";
    out << ", width " << c.moe.expert_intermediate << '\n';
  }
  if (c.intermediate_size > 0) out << "  dense FFN     width " << c.intermediate_size << '\n';
  out << "  checkpoint    "
      << (c.quant.method == model::QuantMethod::none ? std::string(model::dtype_name(c.torch_dtype))
                                                     : c.quant.format.describe())
      << '\n';

  out << "\nParameters (B = 1e9)\n";
  out << "  total           " << pad_left(with_commas(m.params_total()), 20) << "  " << billions(m.params_total())
      << '\n';
  out << "  active/token    " << pad_left(with_commas(m.params_active()), 20) << "  " << billions(m.params_active())
      << "  (embedding and head included)\n";
  const int64_t no_embed = m.params_active() - m.params_embedding();
  out << "                  " << pad_left(with_commas(no_embed), 20) << "  " << billions(no_embed)
      << "  (head included, embedding not: DeepSeek's and OpenAI's rule)\n";
  out << "  embedding       " << pad_left(with_commas(m.params_embedding()), 20) << '\n';
  out << "  head            " << pad_left(with_commas(m.params_head()), 20) << '\n';
  if (c.mtp_layers > 0)
    out << "  MTP modules     " << pad_left(with_commas(m.params_mtp()), 20) << "  " << billions(m.params_mtp())
        << "  (not in total)\n";

  out << "\nWeights, scales included (GB = 1e9 bytes, GiB = 2^30 bytes)\n";
  for (model::WeightPrecision p : model::kAllPrecisions) {
    out << "  " << pad_right(std::string(model::precision_name(p)), 12) << pad_left(gb_and_gib(m.weights_bytes(p)), 30);
    if (c.mtp_layers > 0) out << "   + MTP " << gb_and_gib(m.weights_bytes(p, true));
    out << '\n';
  }
  out << "  (fp8: 128x128 block scales; int8 (W8A8): F32 scale per output channel; int8_w8a16: BF16 scale per output\n"
         "   channel; int4 (W4A16): BF16 scale per 128 inputs; nvfp4 (W4A4): F8_E4M3 scale per 16 inputs + F32 per\n"
         "   tensor; embeddings, head, routers, norms stay BF16)\n";

  print_cache(out, m);

  // One dense and one MoE layer, where the model has them.
  const model::Layer* dense = nullptr;
  const model::Layer* moe = nullptr;
  for (const auto& l : m.layers) {
    if (l.mtp) continue;
    if (!l.moe && !dense) dense = &l;
    if (l.moe && !moe) moe = &l;
  }
  if (dense) print_ops(out, *dense);
  if (moe) print_ops(out, *moe);
}

struct InspectOptions {
  std::string path;
  bool json = false;
};

void run_inspect(const InspectOptions& o) {
  const Model m = model::load_model(resolve_model_path(o.path.empty() ? kDefaultModel : o.path));
  std::ostringstream out;
  if (o.json) {
    out << nlohmann::json(m).dump(2) << '\n';
  } else {
    print_summary(out, m);
  }
  std::cout << out.str();
}
}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect",
                                     "Describe a model from its config.json: sizes, parameters, "
                                     "weight bytes, KV cache per token, op inventory");
  cmd->add_option("path", opts->path,
                  "config.json, a model directory holding one, or the name of a bundled model (default: " +
                      std::string(kDefaultModel) + ")");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of tables");
  cmd->callback([opts] { run_inspect(*opts); });
}

}  // namespace dayzero::cli
