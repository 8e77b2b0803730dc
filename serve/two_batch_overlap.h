#pragma once
// Two-batch overlap (SGLang --enable-two-batch-overlap, vLLM --enable-dbo): the
// engine splits a step's sequences into two micro-batches and runs them interleaved
// layer by layer, so that one micro-batch's collectives (the MoE all-to-all, the TP
// all-reduce) run while the other computes. Its gain is the communication hidden; its
// cost, that each micro-batch runs its GEMMs at half the rows (at decode, the weights
// are read twice) and launches every kernel twice.
//
// The step's time, with C_i and K_i the compute and the communication of micro-batch i
// costed alone (Simulator::step_time) and L the decoder layers: per layer the compute
// stream runs both micro-batches' compute and the communication stream both their
// collectives, so the step takes the longer of the two streams, plus the pipeline's
// fill and drain (one micro-batch's share of one layer of the shorter stream):
//   T = max(C_1 + C_2, K_1 + K_2) + min(C_1 + C_2, K_1 + K_2) / (2 L)
// The step's parts (by time figure) are the two micro-batches' summed and scaled to T.

#include <utility>

#include "serve/engine.h"
#include "simulate/simulator.h"

namespace dayzero::serve {

// The step's sequences in two micro-batches: decodes halved in order (the first half
// to the first), prompt chunks each to the micro-batch with fewer tokens so far (a
// chunk is not split).
std::pair<simulate::StepBatch, simulate::StepBatch> split_in_two(const simulate::StepBatch& b);

// Whether the engine overlaps two micro-batches in this step: two-batch overlap on,
// both micro-batches non-empty, and more tokens than the engine's threshold (one for
// steps of decodes only, one for steps with a prompt chunk).
bool overlaps_two_batches(const EngineProfile& e, const simulate::StepBatch& b);

// The step's time as the engine runs it: one Simulator::step_time, or the two
// micro-batches' combined as above.
simulate::StepTime engine_step_time(simulate::Simulator& sim, const simulate::PreparedPlan& prepared,
                                    const simulate::StepBatch& b, const EngineProfile& e);

}  // namespace dayzero::serve
