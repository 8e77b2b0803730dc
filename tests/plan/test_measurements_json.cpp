// The Measurements reader's bounds (issue 16, found while fuzzing fuzz_measurements):
// integers kept in an int are read no larger than an int, and memory figures small
// enough that peak_bytes() sums them inside 64 bits.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "plan/measurements.h"
#include "plan/plan_json.h"

namespace dayzero::plan {
namespace {

using nlohmann::json;

json tiny_run() {
  std::ifstream in(std::string(DAYZERO_FIXTURES_DIR) + "/measurements/tiny_llama.json");
  return json::parse(in);
}

std::string error_of(const json& j) {
  try {
    (void)measurements_from_json(j, "m.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// weights_bytes 2^63 - 1 was accepted, and peak_bytes() (weights + KV + workspace)
// overflowed: undefined behaviour, reported by UBSan at plan/measurements.h.
TEST(MeasurementsJson, MemoryFiguresAreBoundedSoTheirSumFits) {
  json j = tiny_run();
  EXPECT_GT(measurements_from_json(j, "m.json").peak_bytes(), 0);
  j["ranks"][0]["memory"]["weights_bytes"] = INT64_MAX;
  EXPECT_NE(error_of(j).find("field 'ranks[0].memory.weights_bytes' = 9223372036854775807: must be at most "
                             "1152921504606846976"),
            std::string::npos)
      << error_of(j);
  j = tiny_run();
  j["ranks"][0]["memory"]["rss_hwm_bytes"] = INT64_MAX;
  EXPECT_NE(error_of(j).find("rss_hwm_bytes"), std::string::npos);
  const int64_t most = int64_t{1} << 60;
  j = tiny_run();
  for (const char* key : {"weights_bytes", "kv_bytes", "workspace_bytes"}) j["ranks"][0]["memory"][key] = most;
  EXPECT_EQ(measurements_from_json(j, "m.json").peak_bytes(), 3 * most);
}

// world_size 2^32 + 1 was read into an int as 1, and so matched the one rank listed.
TEST(MeasurementsJson, IntFieldsAreNotNarrowedSilently) {
  json j = tiny_run();
  j["world_size"] = (int64_t{1} << 32) + 1;
  EXPECT_NE(error_of(j).find("field 'world_size' = 4294967297: must be at most 2147483647"), std::string::npos)
      << error_of(j);
  j = tiny_run();
  j["ranks"][0]["rank"] = int64_t{1} << 32;
  EXPECT_NE(error_of(j).find("field 'ranks[0].rank'"), std::string::npos);
  j = tiny_run();
  j["ops"][0]["iterations"] = int64_t{1} << 32;
  EXPECT_NE(error_of(j).find("field 'ops[0].iterations'"), std::string::npos);
  // A plan's schema_version the same way: 2^32 + 1 was read as 1.
  json p = plan_to_json(Plan{});
  p["schema_version"] = (int64_t{1} << 32) + 1;
  EXPECT_THROW((void)plan_from_json(p, "p.json"), core::InputError);
}

// The FP8 block GEMMs' path (Fp8BlockGemm) goes to the file and back with its note;
// a file from before the field reads bf16, an unknown path is an error naming the
// field; merged ranks keep w8a8 only where every rank ran it, and a rank's note.
TEST(MeasurementsJson, TheFp8BlockGemmPathAndItsNoteRoundTripAndMerge) {
  Measurements m = measurements_from_json(tiny_run(), "m.json");
  EXPECT_EQ(m.fp8_block_gemm, Fp8BlockGemm::bf16);
  m.fp8_block_gemm = Fp8BlockGemm::w8a8;
  json j = measurements_to_json(m);
  EXPECT_EQ(j["fp8_block_gemm"]["path"], "w8a8");
  EXPECT_FALSE(j["fp8_block_gemm"].contains("note"));
  EXPECT_EQ(measurements_from_json(j, "m.json").fp8_block_gemm, Fp8BlockGemm::w8a8);
  m.fp8_block_gemm = Fp8BlockGemm::bf16;
  m.fp8_block_gemm_note = "cuBLASLt refused";
  const Measurements back = measurements_from_json(measurements_to_json(m), "m.json");
  EXPECT_EQ(back.fp8_block_gemm, Fp8BlockGemm::bf16);
  EXPECT_EQ(back.fp8_block_gemm_note, "cuBLASLt refused");
  j["fp8_block_gemm"]["path"] = "fp4";
  EXPECT_NE(error_of(j).find("fp8_block_gemm.path"), std::string::npos) << error_of(j);
  j["fp8_block_gemm"] = {{"path", "w8a8"}, {"why", "x"}};
  EXPECT_NE(error_of(j).find("fp8_block_gemm.why"), std::string::npos) << error_of(j);

  Measurements r0 = measurements_from_json(tiny_run(), "m.json"), r1 = r0;
  r1.ranks[0].rank = 1;
  r0.fp8_block_gemm = r1.fp8_block_gemm = Fp8BlockGemm::w8a8;
  EXPECT_EQ(merge_rank_measurements({r0, r1}).fp8_block_gemm, Fp8BlockGemm::w8a8);
  r1.fp8_block_gemm = Fp8BlockGemm::bf16;
  r1.fp8_block_gemm_note = "rank 1 refused";
  const Measurements merged = merge_rank_measurements({r0, r1});
  EXPECT_EQ(merged.fp8_block_gemm, Fp8BlockGemm::bf16);
  EXPECT_EQ(merged.fp8_block_gemm_note, "rank 1 refused");
}

}  // namespace
}  // namespace dayzero::plan
