// The extrapolation note (calibration_note.h).
#include "cli/calibration_note.h"

#include <ostream>

#include "cli/format.h"
#include "core/data_dir.h"
#include "serve/calibration_files.h"

namespace dayzero::cli {

void print_prompt_note(std::ostream& out, serve::Engine engine, int64_t prompt_tokens, int64_t longest_fitted_tokens,
                       const char* consequence) {
  if (!prompt_beyond(prompt_tokens, longest_fitted_tokens)) return;
  out << "  note: prompts of " << with_commas(prompt_tokens) << " tokens are longer than any of the "
      << serve::engine_name(engine) << " runs the calibration was fitted to (at most "
      << with_commas(longest_fitted_tokens)
      << "): TTFT extrapolates the fitted prompt-attention figure, whose term grows as the prompt's square, and may "
         "be several times too long"
      << consequence << " (docs/FIDELITY.md, session 38)\n";
}

int64_t longest_fitted_prompt(serve::Engine engine) {
  return serve::load_serving_calibration(core::data_dir(), "").engines.for_engine(engine).longest_prompt_tokens;
}

}  // namespace dayzero::cli
