#pragma once
// How InferenceX (SemiAnalysisAI/InferenceX) deployed the measured runs it published: the
// engine flags of its recipe for the row's model, engine, GPU and precision on the row's
// day, the KV cache's dtype it asked for, and the speculative decoding its MTP recipes ran.
// Each rule names the script and commit it was read from; docs/ENGINE_DEFAULTS.md lists
// them.

#include "plan/plan.h"
#include "serve/bench_rows.h"
#include "serve/engine.h"

namespace dayzero::serve {

// Sets what the row's recipe sets in `p` (a profile of the engine's defaults): step
// budgets, sequences per step, SGLang's receive interval, the memory share.
void inferencex_flags(Engine e, const BenchRow& r, EngineProfile& p);

// Whether the row's aggregated recipe kept an FP8 KV cache (else the engine's BF16 auto).
bool inferencex_fp8_kv(const BenchRow& r);

// The speculative decoding a measured run was served with: InferenceX's MTP recipes,
// which a row names by its container image alone; off otherwise.
plan::SpeculativeDecoding inferencex_speculative(const BenchRow& r);

// Why the row's recipe cannot be known (two recipes ran the same point on the same image,
// and the row does not say which), or "" when it can.
std::string inferencex_recipe_unknown(const BenchRow& r);

}  // namespace dayzero::serve
