#pragma once
// The layout an InferenceX aggregated run had on its GPUs, which is not always the one its
// row writes. Two things stand between them (docs/ENGINE_DEFAULTS.md, "The layouts
// InferenceX's rows write"):
//  - the export. InferenceX's recipes name a worker by TP, EP and attention DP
//    (.github/configs/nvidia-master.yaml: `{ tp: 2, ep: 2, dp-attn: true }`, on TP GPUs).
//    Its export of 2026-03-25 writes that layout as the engine ran it; its database dumps
//    (`db-dump/...`) and its export of 2026-04-06 multiply TP by EP: the same run of
//    MiniMax-M2.5 on vLLM at TP 2 and EP 2 is `tp 2, moe_ep 2` in the first and
//    `tp 2, attention_dp 2, moe_ep 4` (four GPUs) in the others; DeepSeek-R1 on SGLang at
//    TP 8 and EP 8 is `tp 8, moe_ep 8` and `tp 64, moe_tp 8, moe_ep 8`.
//  - the recipe's script, which decides what the EP and DP values become: vLLM's Kimi-K2.5
//    scripts pass no expert-parallel flag at all; MiniMax-M2.5's H200 script, and its B200
//    FP8 script before 2026-04-03, pass `--enable-expert-parallel` whatever the EP value;
//    only its FP4 scripts on B200 / B300 turn `dp-attn` into vLLM's data parallelism.
//    vLLM's expert parallelism spans every GPU of the worker (EP = TP x DP).

#include "serve/bench_rows.h"

namespace dayzero::serve {

// Whether the row's source writes InferenceX's layouts multiplied: a database dump
// (silicon_data_source "db-dump/...") or a dated export from 2026-04-06 on.
bool inferencex_layout_multiplied(const std::string& silicon_data_source);

// Rewrites an InferenceX aggregated row's tp, attention_dp, moe_tp, moe_ep and batch_size
// (concurrency kept) to the layout its engine ran, and says in `r.layout_note` what the row
// wrote; where the row cannot tell that layout, sets `r.layout_unknown` to the reason and
// leaves the layout alone. Other rows are left as they are.
void read_inferencex_layout(BenchRow& r, bool multiplied);

}  // namespace dayzero::serve
