#pragma once
// One engine step as a continuous-batching scheduler builds it, for one
// attention-DP replica: sequences that decode one token each, at their own
// context, and chunks of prompts being prefilled. The step model costs exactly
// these tokens (Simulator::step_time); the serving simulation (serve/) builds one
// StepBatch per engine iteration.

#include <cstdint>
#include <vector>

namespace dayzero::simulate {

struct PrefillChunk {
  int64_t new_tokens = 0;     // prompt tokens computed in this step
  int64_t cached_tokens = 0;  // tokens of the same sequence already in the KV cache (earlier chunks, prefix hits)
  bool last = false;          // the chunk ends its prompt: the step samples the sequence's first token
};

struct StepBatch {
  std::vector<int64_t> decode_contexts;  // per decoding sequence: tokens in its KV cache before this step
  std::vector<PrefillChunk> prefills;
  // Tokens each decoding sequence computes: 1, or with speculative decoding the
  // verify step's drafts + 1 (query i of a sequence at context c sees c + i tokens).
  int64_t decode_width = 1;

  int64_t tokens() const {  // rows of the step's GEMMs
    int64_t t = static_cast<int64_t>(decode_contexts.size()) * decode_width;
    for (const auto& c : prefills) t += c.new_tokens;
    return t;
  }
  int64_t sampled() const {  // rows of the LM head: every decode position, and each prompt's last
    int64_t n = static_cast<int64_t>(decode_contexts.size()) * decode_width;
    for (const auto& c : prefills) n += c.last ? 1 : 0;
    return n;
  }
  bool empty() const { return decode_contexts.empty() && prefills.empty(); }
};

// How an engine sizes its KV cache: `memory_fraction` of the device's memory for
// everything it holds (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static),
// or of the memory still free once weights and activations are placed
// (TensorRT-LLM's free_gpu_memory_fraction).
struct KvMemoryRule {
  double memory_fraction = 0.9;
  bool share_of_free = false;
  int64_t step_tokens = 8192;  // the largest step the engine profiles its activations with
  int64_t logit_rows = 256;    // sequences sampled in that step (FP32 logits)
};

// What a replica's KV cache can hold under a serving engine's memory budget: per
// rank of the stage that binds, the bytes free for KV once weights, the largest
// step's activations, communication buffers and the runtime are placed, and what a
// token costs there. Sliding-window layers keep at most `window` + one block.
struct KvBudget {
  int64_t block_tokens = 16;
  double free_bytes = 0;               // per rank of the binding stage
  double full_bytes_per_token = 0;     // layers attending to the whole context
  double sliding_bytes_per_token = 0;  // sliding-window layers
  int64_t window = 0;                  // tokens (0: no sliding layers)
  double state_bytes_per_seq = 0;      // linear-attention layers' state, whatever the length
  // Bytes a sequence of `tokens` holds, in whole blocks.
  double sequence_bytes(int64_t tokens) const;
  // Tokens the cache holds when every sequence is this long (for reports).
  int64_t capacity_tokens(int64_t sequence_tokens) const;
};

}  // namespace dayzero::simulate
