#pragma once
// What the output says when a workload reaches past what the calibration was fitted to:
// prompts longer than any whose TTFT an engine's runs measured extrapolate the fitted
// prompt-attention figure (serve/engine_overheads.h, docs/FIDELITY.md session 38).

#include <cstdint>
#include <iosfwd>

#include "serve/engine.h"

namespace dayzero::cli {

// A prompt longer than the longest whose TTFT the calibration was fitted to (0: not recorded).
inline bool prompt_beyond(int64_t prompt_tokens, int64_t longest_fitted_tokens) {
  return longest_fitted_tokens > 0 && prompt_tokens > longest_fitted_tokens;
}

// The note `serve`, `sweep`, `plan` and --serve-check print then (nothing otherwise);
// `consequence` is appended to its sentence.
void print_prompt_note(std::ostream& out, serve::Engine engine, int64_t prompt_tokens, int64_t longest_fitted_tokens,
                       const char* consequence = "");

// The shipped calibration's longest fitted prompt for the engine (0: not recorded).
int64_t longest_fitted_prompt(serve::Engine engine);

}  // namespace dayzero::cli
