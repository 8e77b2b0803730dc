#pragma once
// Speculative decoding as a Plan describes it: a draft proposes `draft_tokens`
// tokens per sequence and step, the target model verifies them in one forward pass
// of draft_tokens + 1 tokens per sequence, and the accepted prefix (plus the
// target's own next token) is emitted.
//
// As JSON (a Plan's or a scenario's "speculative" object):
//   {"method": "mtp",            mtp: the model's own multi-token-prediction layer
//                                (DeepSeek-V3, GLM, Qwen3.5: the config's
//                                num_nextn_predict_layers / mtp_num_hidden_layers),
//                                run once per draft token; eagle: a one-layer draft
//                                head of the target's shape (EAGLE-1/-3)
//    "draft_tokens": 3,          proposed per step (vLLM num_speculative_tokens,
//                                SGLang --speculative-num-steps, TensorRT-LLM
//                                num_nextn_predict_layers)
//    "acceptance": [0.8, 0.7]}   per draft position, the chance it is accepted when
//                                every earlier one was; the last value repeats for
//                                later positions. One value = one rate everywhere.
// Unknown fields and values out of bounds are core::InputError naming the file, the
// field and the value.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dayzero::plan {

enum class SpecMethod { none, mtp, eagle };
inline constexpr SpecMethod kAllSpecMethods[] = {SpecMethod::none, SpecMethod::mtp, SpecMethod::eagle};
std::string_view spec_method_name(SpecMethod m);  // "none", "mtp", "eagle"
std::optional<SpecMethod> parse_spec_method(std::string_view s);

// The most draft tokens a plan may ask for: vLLM and SGLang chains and TensorRT-LLM's
// MTP run a handful (DeepSeek-V3's recipes use 1 to 3); 16 bounds typos.
inline constexpr int kMaxDraftTokens = 16;

// Acceptance of MTP's first draft token when none is given: DeepSeek-V3 Technical
// Report (arXiv:2412.19437), section 5.4.3, "the acceptance rate of the second token
// prediction ranges between 85% and 90%": the lower end. The other methods have no
// published rate that holds across models, so they need a measured one.
inline constexpr double kDefaultMtpAcceptance = 0.85;

struct SpeculativeDecoding {
  SpecMethod method = SpecMethod::none;
  int draft_tokens = 0;
  std::vector<double> acceptance;  // conditional, per position; the last repeats

  bool on() const { return method != SpecMethod::none && draft_tokens > 0; }
  // Tokens a verify step computes per decoding sequence: the drafts and one more.
  int verify_width() const { return on() ? draft_tokens + 1 : 1; }
  // The chance that draft position i (0-based) is accepted when every earlier one was.
  double acceptance_at(int i) const;
  // Tokens a sequence gains per step on average: 1 + sum over i of the chance that
  // the first i + 1 drafts are all accepted.
  double expected_tokens_per_step() const;
};

// `path` prefixes field names in messages ("speculative." inside a plan).
SpeculativeDecoding speculative_from_json(const nlohmann::json& j, const std::string& file, const std::string& path);
nlohmann::json speculative_to_json(const SpeculativeDecoding& s);

}  // namespace dayzero::plan
