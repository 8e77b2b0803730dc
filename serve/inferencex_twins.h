#pragma once
// InferenceX's plain recipes and their MTP twins that ran on one container image
// (SemiAnalysisAI/InferenceX, .github/configs/nvidia-master.yaml): the image, which tells
// an MTP recipe's rows apart elsewhere (serve/inferencex_recipes.h), does not here, so
// each recipe's search space does. docs/ENGINE_DEFAULTS.md, "One image, two recipes".

#include <string>

#include "serve/bench_rows.h"

namespace dayzero::serve {

enum class TwinRecipe {
  none,    // the row's image did not serve two such recipes on its day
  plain,   // the plain recipe's run
  mtp,     // the MTP recipe's run
  either,  // both recipes ran the row's point on its day, and the row does not say which
};

// Which recipe ran the row: a point only one recipe's search space holds is that
// recipe's; inside both, the database dump's run (BenchRow::in_database_dump: the dump
// holds no MTP recipe's run) is the plain one's, and another is `either`.
TwinRecipe inferencex_twin_recipe(const BenchRow& r);

// The twin recipes' names for messages ("dsr1-fp8-b200-sglang and dsr1-fp8-b200-sglang-mtp"),
// or "" where TwinRecipe is none.
std::string inferencex_twin_names(const BenchRow& r);

}  // namespace dayzero::serve
