// core/: the pieces every library shares — the input error, the JSON field
// reader, size arithmetic, collective names and bus factors, atomic writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/arith.h"
#include "core/atomic_file.h"
#include "core/collective.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "helpers.h"

namespace dayzero::core {
namespace {

using nlohmann::json;

using testing::error_of;

TEST(Collectives, BusFactorsAreThoseOfNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
  // alltoall (n-1)/n; broadcast and sendrecv 1.
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_to_all, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::send_recv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 0), 0.0);
}

TEST(Collectives, NamesRoundTripAsNcclTestsSpellsThem) {
  for (Collective c : kAllCollectives) EXPECT_EQ(parse_collective(collective_name(c)), c);
  EXPECT_EQ(collective_name(Collective::all_to_all), "alltoall");
  EXPECT_EQ(collective_name(Collective::send_recv), "sendrecv");
  EXPECT_FALSE(parse_collective("allreduce").has_value());
}

TEST(InputError, NamesFileFieldAndValue) {
  const InputError e("plan.json", "attention.tp", "3", "does not divide 32 heads");
  EXPECT_STREQ(e.what(), "plan.json: field 'attention.tp' = 3: does not divide 32 heads");
  EXPECT_EQ(e.file(), "plan.json");
  EXPECT_EQ(e.field(), "attention.tp");
  EXPECT_EQ(e.value(), "3");
  EXPECT_STREQ(InputError("", "", "", "empty").what(), "<input>: empty");
}

TEST(Fields, TypedReadsAndUnknownKeys) {
  const json j = json::parse(R"({"a": 4096.0, "b": "x", "c": [1, 2], "nested": {"bw_Bps": 0}, "typo": 1})");
  Fields f(j, "f.json", "top.");
  EXPECT_EQ(f.req_int("a"), 4096);  // integral doubles are integers
  EXPECT_EQ(f.opt_string("b", ""), "x");
  EXPECT_EQ(f.opt_ints("c"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.opt_int("missing", 7), 7);
  Fields n(*f.opt_object("nested"), "f.json", "top.nested.");
  EXPECT_EQ(error_of([&] { n.req_positive("bw_Bps"); }), "f.json: field 'top.nested.bw_Bps' = 0: must be positive");
  EXPECT_EQ(error_of([&] { f.reject_unknown(); }), "f.json: field 'top.typo' = 1: unknown field");
  EXPECT_EQ(f.unread(), std::vector<std::string>{"typo"});
}

TEST(Fields, IntegersAreCheckedNotNarrowed) {
  const json j = json::parse(R"({"big": 18446744073709551615, "frac": 1.5, "neg": -1, "str": "8"})");
  Fields f(j, "f.json");
  EXPECT_NE(error_of([&] { f.req_int("big"); }).find("does not fit in 64 bits"), std::string::npos);
  EXPECT_NE(error_of([&] { f.req_int("frac"); }).find("expected an integer, got a number"), std::string::npos);
  EXPECT_NE(error_of([&] { f.req_int("neg", 0); }).find("must be at least 0"), std::string::npos);
  EXPECT_NE(error_of([&] { f.req_int("str"); }).find("'str' = \"8\": expected an integer, got a string"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f.req_int("absent"); }).find("'absent': required field is missing"), std::string::npos);
  EXPECT_NE(error_of([] { Fields(json::array(), "f.json", "x."); }).find("'x' = []: expected a JSON object"),
            std::string::npos);
}

TEST(Fields, IntegersAboveTheirBoundAreErrors) {
  const json j = json::parse(R"({"n": 2147483648, "ok": 4096, "list": [1, 5000]})");
  Fields f(j, "f.json", "top.");
  EXPECT_EQ(error_of([&] { f.req_int("n", 1, 4096); }), "f.json: field 'top.n' = 2147483648: must be at most 4096");
  EXPECT_EQ(f.req_int("ok", 1, 4096), 4096);
  EXPECT_EQ(f.opt_int("absent", 7, 1, 4096), 7);  // a fallback is the caller's, not checked
  EXPECT_NE(error_of([&] { f.opt_int("n", 1, 1, 4096); }).find("must be at most 4096"), std::string::npos);
  EXPECT_NE(error_of([&] { f.maybe_int("n", 1, 4096); }).find("must be at most 4096"), std::string::npos);
  EXPECT_NE(error_of([&] { f.opt_ints("list", 0, 4096); }).find("'top.list' = 5000: must be at most 4096"),
            std::string::npos);
}

TEST(JsonText, SyntaxErrorsSayLineAndColumn) {
  const std::string e = error_of([] { parse_json_text("{\n  \"a\": 1,\n  oops\n}", "c.json"); });
  EXPECT_NE(e.find("c.json: not valid JSON: malformed JSON at line 3, column 3"), std::string::npos) << e;
  EXPECT_NE(error_of([] { read_json_file("/nonexistent/x.json"); }).find("/nonexistent/x.json: no such file"),
            std::string::npos);
}

TEST(Arith, CheckedAndRounded) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_THROW(checked_mul(int64_t{1} << 32, int64_t{1} << 32), std::overflow_error);
  EXPECT_THROW(checked_add(std::numeric_limits<int64_t>::max(), 1), std::overflow_error);
  EXPECT_EQ(checked_int64(1e18), int64_t{1'000'000'000'000'000'000});
  EXPECT_THROW(checked_int64(9.3e18), std::overflow_error);  // 2^63 = 9.22e18
  EXPECT_THROW(checked_int64(std::nan("")), std::overflow_error);
  EXPECT_EQ(ceil_div(10, 4), 3);
  EXPECT_EQ(ceil_div(8, 4), 2);
  EXPECT_EQ(round_up(10, 4), 12);
  EXPECT_EQ(round_up(0, 16), 0);
}

TEST(AtomicFile, ReplacesWholeOrLeavesTheOldFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dayzero_core_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "out.txt";
  write_file_atomically(file, "first\n", "the test file");
  write_file_atomically(file, "second\n", "the test file");
  std::ifstream in(file);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "second\n");
  // A directory that does not exist: an error naming the file, no temporary left behind.
  EXPECT_THROW(write_file_atomically(dir / "missing" / "x.txt", "x", "the test file"), std::runtime_error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dayzero::core
