#pragma once
// Explanations of a prediction in words, built outside the simulator's arithmetic
// (Simulator::simulate calls it when SimulateOptions::explain is set).

#include <string>

#include "simulate/prediction.h"

namespace dayzero::simulate {

// What fills the fullest rank: "rank 3 (stage 0) holds 130.05 GB of 141.00 GB:
// weights 98.10 GB, KV cache 20.00 GB", then how far over it is and whether the
// offloaded experts overflow the nodes' host memory (GB = 1e9 bytes).
std::string explain_memory(const Prediction& pred, double host_capacity_bytes);

}  // namespace dayzero::simulate
