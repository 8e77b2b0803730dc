// serve/trace.h: request traces in DayZero's CSV, the Azure LLM inference traces' CSV
// and Mooncake's JSON lines; bad traces are errors naming the file, line and field.
#include "serve/trace.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dayzero::serve {
namespace {

TEST(Trace, DayZeroCsvInAnyColumnOrderWithPrefixHits) {
  const auto t = parse_trace(
      "input_len, arrival_s, output_len, cached_prefix\n"
      "1000, 5.0, 100, 0\n"
      "2000, 5.5, 50, 1024\n"
      "\n"
      "300, 7.25, 10, 0\n",
      "t.csv");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0].arrival_s, 0);  // relative to the first request
  EXPECT_DOUBLE_EQ(t[1].arrival_s, 0.5);
  EXPECT_DOUBLE_EQ(t[2].arrival_s, 2.25);
  EXPECT_EQ(t[1].shape.input_len, 2000);
  EXPECT_EQ(t[1].shape.output_len, 50);
  EXPECT_EQ(t[1].shape.cached_prefix, 1024);
}

// A spreadsheet's UTF-8 byte order mark before the header is not part of the first column's name.
TEST(Trace, AByteOrderMarkBeforeTheHeaderIsSkipped) {
  const auto t = parse_trace(
      "\xEF\xBB\xBF"
      "arrival_s,input_len,output_len\n0,100,10\n1,200,20\n",
      "bom.csv");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].shape.input_len, 200);
}

// Azure/AzurePublicDataset's LLM inference traces, across midnight and a month's end.
TEST(Trace, AzureTimestampsBecomeSecondsFromTheFirst) {
  const auto t = parse_trace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-30 23:59:59.5000000,4808,10\r\n"
      "2023-12-01 00:00:00.7500000,3180,8\r\n"
      "2023-12-01 00:01:00,110,27\r\n",
      "azure.csv");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_NEAR(t[1].arrival_s, 1.25, 1e-9);
  EXPECT_NEAR(t[2].arrival_s, 60.5, 1e-9);
  EXPECT_EQ(t[0].shape.input_len, 4808);
  EXPECT_EQ(t[2].shape.output_len, 27);
}

TEST(Trace, MooncakeJsonLinesInMilliseconds) {
  const auto t =
      parse_trace(R"({"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]})"
                  "\n"
                  R"({"timestamp": 30535, "input_length": 6472, "output_length": 26, "hash_ids": [46, 52]})"
                  "\n",
                  "mooncake.jsonl");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_NEAR(t[1].arrival_s, 3.053, 1e-12);
  EXPECT_EQ(t[0].shape.input_len, 6955);
  EXPECT_EQ(t[1].shape.output_len, 26);
}

TEST(Trace, BadTracesNameFileLineAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"arrival_s,input_len\n0,10\n", "output_len"},
      {"arrival_s,input_len,output_len\n0,10,5\n1,ten,5\n", "line 3, input_len"},
      {"arrival_s,input_len,output_len\n0,10,5\n1,0,5\n", "line 3, input_len"},
      {"arrival_s,input_len,output_len\n0,10,5\n1,10.5,5\n", "line 3, input_len"},
      {"arrival_s,input_len,output_len\n2,10,5\n1,10,5\n", "line 3, arrival_s"},
      {"arrival_s,input_len,output_len\n-1,10,5\n", "line 2, arrival_s"},
      {"arrival_s,input_len,output_len\n0,10\n", "line 2, row"},
      {"arrival_s,input_len,output_len,cached_prefix\n0,10,5,10\n", "cached_prefix"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-01 00:00:00,1,1\n", "TIMESTAMP"},
      {"arrival_s,input_len,output_len\n", "no requests"},
      {"{\"timestamp\": 1, \"input_length\": 5}\n", "output_length"},
      {"{\"timestamp\": 5, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1, \"input_length\": 5, "
       "\"output_length\": 1}\n",
       "line 2"},
      {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"prio\": 2}\n", "prio"},
  };
  for (const auto& [text, named] : cases) {
    try {
      parse_trace(text, "trace.csv");
      ADD_FAILURE() << text << " was accepted";
    } catch (const core::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("trace.csv"), std::string::npos) << what;
      EXPECT_NE(what.find(named), std::string::npos) << what;
    }
  }
  EXPECT_THROW(read_trace("/nonexistent/trace.csv"), core::InputError);
}

}  // namespace
}  // namespace dayzero::serve
