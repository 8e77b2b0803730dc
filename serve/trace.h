#pragma once
// Request traces for the open-loop client: arrival times and lengths, as recorded
// from production or published (serve --trace FILE). Three shapes are read:
//   - DayZero's CSV: a header naming `arrival_s,input_len,output_len` and optionally
//     `cached_prefix` (prompt tokens already in the prefix cache), in any order;
//   - the Azure LLM inference traces (Azure/AzurePublicDataset, AzureLLMInferenceTrace_
//     {code,conv}*.csv): `TIMESTAMP,ContextTokens,GeneratedTokens`, the timestamp as
//     `YYYY-MM-DD HH:MM:SS[.fraction]`;
//   - the Mooncake traces (kvcache-ai/Mooncake, FAST'25 traces): JSON lines with
//     `timestamp` (milliseconds), `input_length`, `output_length` and `hash_ids`
//     (the prompt's 512-token blocks; read, not used: prefix hits are not derived).
// Arrivals are made relative to the first request. A missing column or field, a
// number that is not one, a length below 1 or above plan::kMaxSequenceTokens, or an
// arrival before the previous one is a core::InputError naming the file, the line and
// the field.

#include <filesystem>
#include <string>
#include <vector>

#include "serve/workload.h"

namespace dayzero::serve {

std::vector<Request> read_trace(const std::filesystem::path& file);
// The same from the file's text; `file` names it in errors.
std::vector<Request> parse_trace(const std::string& text, const std::string& file);

}  // namespace dayzero::serve
