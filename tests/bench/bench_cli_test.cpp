// `tessel bench` end to end through the CLI: two tiny shapes, two rounds, tiny
// sample times, tessel against OpenBLAS; then the files and their fields. And the
// user errors, each with exit status 2 and a message that names the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.h"

#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_driver.h"
#endif

namespace fs = std::filesystem;

namespace {

using tessel::testing::CliResult;
using tessel::testing::read_text;
using tessel::testing::run_cli;

fs::path fresh_temp_dir() {
  char dir[] = "/tmp/tessel-bench-test-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return dir;
}

// The checks of one small benchmark's files, one function per file. They run
// from a single test: ctest runs every test in a process of its own, so a shared
// fixture would run the benchmark once per test.
void check_json_runs(const nlohmann::json& j) {
  ASSERT_EQ(j["runs"].size(), 8u);  // 2 rounds x 2 shapes x 2 implementations
  for (const auto& run : j["runs"]) {
    EXPECT_TRUE(run["valid"].get<bool>()) << run.dump();
    EXPECT_EQ(run["samples_us"].size(), 3u);
    EXPECT_GT(run["median_us"].get<double>(), 0);
    EXPECT_LE(run["rel_err"].get<double>(), run["bound"].get<double>());
    EXPECT_GT(run["first_call_ms"].get<double>(), 0);
    EXPECT_TRUE(run["worker"].is_object());
    if (run["impl"] == "tessel") {
      EXPECT_TRUE(run["compile_ms"].is_number());
      EXPECT_EQ(run["worker"]["cache"], "cold: empty TESSEL_CACHE_DIR");
    }
  }
  // The schedule: round 2 starts at the second shape with the order reversed.
  EXPECT_EQ(j["runs"][0]["shape"], "16x16x16");
  EXPECT_EQ(j["runs"][0]["impl"], "tessel");
  EXPECT_EQ(j["runs"][4]["round"], 1);
  EXPECT_EQ(j["runs"][4]["shape"], "33x17x9");
  EXPECT_EQ(j["runs"][4]["impl"], "openblas");
}

void check_json_context(const nlohmann::json& j) {
  EXPECT_NE(j["command"].get<std::string>().find("--rounds 2"), std::string::npos);
  EXPECT_EQ(j["config"]["threads"], 1);
  EXPECT_EQ(j["config"]["samples"], 3);
  EXPECT_FALSE(j["machine"]["cpu_model"].get<std::string>().empty());
  EXPECT_TRUE(j["machine"]["env"].is_object());
  ASSERT_EQ(j["impls"].size(), 2u);
  for (const auto& impl : j["impls"]) EXPECT_EQ(impl["executable_sha256"].get<std::string>().size(), 64u);
  EXPECT_NE(j["impls"][1]["version"].get<std::string>().find("OpenBLAS"), std::string::npos);
  EXPECT_EQ(j["impls"][1]["library_sha256"].get<std::string>().size(), 64u);
}

void check_json_summary(const nlohmann::json& j) {
  ASSERT_EQ(j["summary"].size(), 2u);
  for (const auto& s : j["summary"]) {
    const auto& t = s["impls"]["tessel"];
    EXPECT_EQ(t["round_medians_us"].size(), 2u);
    EXPECT_EQ(t["valid_rounds"], 2);
    EXPECT_GT(t["gflops"].get<double>(), 0);
    const auto& ratio = s["speedup_of_candidate_over"]["openblas"];
    EXPECT_EQ(ratio["valid_rounds"], 2);
    EXPECT_LE(ratio["min"].get<double>(), ratio["median"].get<double>());
    EXPECT_LE(ratio["median"].get<double>(), ratio["max"].get<double>());
  }
}

void check_markdown(const std::string& md) {
  EXPECT_NE(md.find("| 16 x 16 x 16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 33 x 17 x 9 |"), std::string::npos);
  EXPECT_NE(md.find("tessel speedup over openblas"), std::string::npos);
  EXPECT_NE(md.find("8 of 8 measurements validated"), std::string::npos);
  EXPECT_NE(md.find("## Cold costs"), std::string::npos);
}

TEST(BenchCli, TwoShapesTwoRoundsTesselAgainstOpenblas) {
  fs::path root = fresh_temp_dir(), out = root / "out";
  CliResult r = run_cli(
      "bench --impl tessel,openblas --shapes 16x16x16,33x17x9 --rounds 2 --warmup-ms 2 "
      "--samples 3 --sample-ms 2 --threads 1 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bench: run 1/8"), std::string::npos) << "progress line missing";
  EXPECT_NE(r.output.find("ETA"), std::string::npos);
  ASSERT_TRUE(fs::exists(out / "results.json"));
  ASSERT_TRUE(fs::exists(out / "results.md"));
  nlohmann::json j = nlohmann::json::parse(read_text(out / "results.json"));
  check_json_runs(j);
  check_json_context(j);
  check_json_summary(j);
  std::string md = read_text(out / "results.md");
  check_markdown(md);
  // Last, so that a missing matplotlib skips only this check, visibly.
  bool have_matplotlib = std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
  if (have_matplotlib) {
    std::string png = read_text(out / "gflops.png");
    EXPECT_GT(png.size(), 1000u) << r.output;
    EXPECT_EQ(png.substr(1, 3), "PNG");
    EXPECT_NE(md.find("](gflops.png)"), std::string::npos);
  }
  fs::remove_all(root);
  if (!have_matplotlib)
    GTEST_SKIP() << "matplotlib is missing (scripts/deps.sh installs python3-matplotlib): "
                    "the PNG was not checked; everything else was";
}

TEST(BenchCliReference, AnotherTesselExecutableRunsAsReference) {
  // The current executable as its own frozen reference: the paired speedup is
  // then about 1, and both sides are validated.
  fs::path d = fresh_temp_dir();
  CliResult r = run_cli("bench --impl tessel --reference " + std::string(TESSEL_CLI) +
                        " --shapes 16x16x16 --rounds 1 --warmup-ms 1 --samples 2 --sample-ms 1 "
                        "--out " + (d / "o").string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(read_text(d / "o" / "results.json"));
  EXPECT_EQ(j["config"]["impls"], nlohmann::json::array({"tessel", "reference"}));
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) EXPECT_TRUE(run["valid"].get<bool>()) << run.dump();
  EXPECT_EQ(j["summary"][0]["speedup_of_candidate_over"]["reference"]["valid_rounds"], 1);
  fs::remove_all(d);
}

TEST(BenchCliGpu, TesselCudaAgainstCublas) {
#ifdef TESSEL_WITH_CUDA
  std::string why;
  if (!tessel::cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  fs::path d = fresh_temp_dir();
  CliResult r = run_cli("bench --impl tessel-cuda,cublas --shapes 64x64x64,127x193x61 --rounds 2 "
                        "--warmup-ms 5 --samples 3 --sample-ms 5 --out " + (d / "o").string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(read_text(d / "o" / "results.json"));
  ASSERT_EQ(j["runs"].size(), 8u);
  for (const auto& run : j["runs"]) {
    EXPECT_TRUE(run["valid"].get<bool>()) << run.dump();
    EXPECT_GT(run["device_median_us"].get<double>(), 0) << run.dump();
  }
  EXPECT_NE(read_text(d / "o" / "results.md").find("## Device-event time"), std::string::npos);
  fs::remove_all(d);
#else
  GTEST_SKIP() << "this build has no cuda target";
#endif
}

// libxsmm's JIT kernels beside tessel: dispatched once, called C^T = B^T A^T,
// every output checked against the FP64 oracle like any impl (odd shapes, so a
// swapped operand or M/N mix-up shows).
TEST(BenchCliXsmm, LibxsmmBesideTessel) {
  fs::path module = fs::path(TESSEL_CLI).parent_path() / "libtessel_xsmm_peer.so";
  if (!fs::exists(module))
    GTEST_SKIP() << module << " was not built: libxsmm-dev was missing at configure time (scripts/deps.sh)";
  fs::path d = fresh_temp_dir();
  CliResult r = run_cli("bench --impl tessel,libxsmm --shapes 16x16x16,33x17x9,5x70x3 --rounds 1 "
                        "--warmup-ms 1 --samples 2 --sample-ms 1 --threads 1 --out " + (d / "o").string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(read_text(d / "o" / "results.json"));
  ASSERT_EQ(j["runs"].size(), 6u);
  for (const auto& run : j["runs"]) EXPECT_TRUE(run["valid"].get<bool>()) << run.dump();
  ASSERT_EQ(j["impls"].size(), 2u);
  EXPECT_NE(j["impls"][1]["version"].get<std::string>().find("libxsmm 1."), std::string::npos)
      << j["impls"][1].dump();
  EXPECT_EQ(j["impls"][1]["library"], module.string());
  fs::remove_all(d);
}

void expect_user_error(const std::string& args, const std::string& message);

// beta != 0: C starts at random old values (reset before each checked call), so
// an implementation that drops beta C, or scales it twice, fails its check.
TEST(BenchCliBeta, BetaAddsOldValuesOfCForEveryImpl) {
  const bool xsmm = fs::exists(fs::path(TESSEL_CLI).parent_path() / "libtessel_xsmm_peer.so");
  fs::path d = fresh_temp_dir();
  for (const char* beta : {"1", "0.5"}) {
    const bool with_xsmm = xsmm && std::string(beta) == "1";
    const std::string impls = std::string("tessel,openblas") + (with_xsmm ? ",libxsmm" : "");
    const fs::path out = d / (std::string("o") + beta);
    CliResult r = run_cli("bench --impl " + impls + " --beta " + beta + " --shapes 33x17x9,57x45x7,5x70x3 " +
                          "--rounds 1 --warmup-ms 1 --samples 2 --sample-ms 1 --threads 1 --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.output;
    nlohmann::json j = nlohmann::json::parse(read_text(out / "results.json"));
    EXPECT_EQ(j["config"]["beta"], std::stod(beta));
    EXPECT_EQ(j["runs"].size(), 3u * (with_xsmm ? 3 : 2));
    for (const auto& run : j["runs"]) EXPECT_TRUE(run["valid"].get<bool>()) << run.dump();
    EXPECT_NE(read_text(out / "results.md").find("beta = " + std::string(beta) + " (C's old values random)"),
              std::string::npos);
  }
  expect_user_error("bench --impl tessel,libxsmm --beta 0.5 --out " + (d / "x").string(),
                    "libxsmm's kernels take beta 0 or 1");
  expect_user_error("bench --beta two --out " + (d / "x").string(), "--beta: 'two' is not a number");
  fs::remove_all(d);
}

// Without the module beside the executable, the worker says which package brings it.
TEST(BenchCliXsmm, MissingModuleNamesThePackage) {
  fs::path d = fresh_temp_dir();
  fs::copy_file(TESSEL_CLI, d / "tessel");
  std::string cmd = (d / "tessel").string() + " bench-worker --impl libxsmm --shape 8x8x8 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  int status = pclose(f);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << out;
  EXPECT_NE(out.find("libxsmm-dev"), std::string::npos) << out;
  fs::remove_all(d);
}

void expect_user_error(const std::string& args, const std::string& message) {
  CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
}

TEST(BenchCliErrors, UnknownImplementation) {
  fs::path d = fresh_temp_dir();
  expect_user_error("bench --impl tessel,mkl --out " + (d / "o").string(), "unknown implementation 'mkl'");
  expect_user_error("bench --impl tessel,libxsmm --threads 2 --out " + (d / "o").string(),
                    "--impl libxsmm runs on one thread");
#ifndef TESSEL_WITH_CUDA
  expect_user_error("bench --impl cublas --out " + (d / "o").string(), "cublas is not available in this build");
#endif
  EXPECT_FALSE(fs::exists(d / "o"));
  fs::remove_all(d);
}

TEST(BenchCliErrors, ExistingOutputDirectory) {
  fs::path d = fresh_temp_dir();
  expect_user_error("bench --out " + d.string(), "already exists");
  fs::remove_all(d);
}

TEST(BenchCliErrors, ReferenceThatDoesNotRun) {
  fs::path d = fresh_temp_dir();
  expect_user_error("bench --impl reference --reference /bin/false --out " + (d / "o").string(),
                    "reference '/bin/false' does not run");
  expect_user_error("bench --reference " + (d / "missing").string() + " --out " + (d / "o").string(),
                    "is not an executable file");
  EXPECT_FALSE(fs::exists(d / "o"));
  fs::remove_all(d);
}

TEST(BenchCliErrors, BadShapeAndOptions) {
  fs::path d = fresh_temp_dir();
  std::string out = " --out " + (d / "o").string();
  expect_user_error("bench --shapes 8x8" + out, "shape '8x8'");
  expect_user_error("bench --shapes 0x8x8" + out, "shape '0x8x8'");
  expect_user_error("bench --rounds 0" + out, "--rounds");
  expect_user_error("bench --frobnicate 1" + out, "unknown option --frobnicate");
  expect_user_error("bench", "--out DIR is required");
  fs::remove_all(d);
}

}  // namespace
