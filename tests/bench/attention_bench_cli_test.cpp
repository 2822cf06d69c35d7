// `tessel bench --op attention` end to end through the CLI on the cpu: a tiny shape,
// two rounds, tessel alone (PyTorch is not a test dependency), then the files; the
// PyTorch side where this machine's python3 has it, else its clear error; and the
// user errors, each with exit status 2 and a message that names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.h"

namespace fs = std::filesystem;

namespace {

using tessel::testing::CliResult;
using tessel::testing::read_text;
using tessel::testing::run_cli;

fs::path fresh_out() {
  char dir[] = "/tmp/tessel-attn-bench-test-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return fs::path(dir) / "out";  // must not exist yet
}

TEST(AttentionBenchCli, TesselAloneOnTheCpuWritesItsFiles) {
  fs::path out = fresh_out();
  CliResult r = run_cli("bench --op attention --out " + out.string() +
                        " --target cpu --shapes 1x2x64x64,1x1x80x32 --rounds 2 --repeat 2 --impl tessel");
  ASSERT_EQ(r.status, 0) << r.output;
  // Each kernel was checked against the FP64 evaluator once per head_dim first.
  EXPECT_NE(r.output.find("bench: check attention D=64: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bench: check attention_causal D=32: "), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "attention.tir"));
  EXPECT_TRUE(fs::exists(out / "attention_causal.tir"));
  nlohmann::json j = nlohmann::json::parse(read_text(out / "results.json"));
  ASSERT_EQ(j["runs"].size(), 8u);  // 2 rounds x 2 shapes x causal or not x 1 implementation
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["impl"], "tessel");
    EXPECT_EQ(run["error"], "") << run.dump();
    ASSERT_TRUE(run["ms"].is_number()) << run.dump();
    EXPECT_GT(run["ms"].get<double>(), 0);
  }
  ASSERT_EQ(j["summary"].size(), 4u);
  std::string md = read_text(out / "results.md");
  EXPECT_NE(md.find("| 1x2x64x64 | no | "), std::string::npos) << md;
  EXPECT_NE(md.find("| 1x1x80x32 | yes | "), std::string::npos) << md;
  EXPECT_NE(md.find("Command: `tessel bench --op attention"), std::string::npos) << md;
  fs::remove_all(out.parent_path());
}

// With PyTorch importable, its column comes with a ratio; without, the run stops
// before any measurement with an error that says what to install.
TEST(AttentionBenchCli, PyTorchPeerOrItsClearError) {
  fs::path out = fresh_out();
  bool has_torch = std::system("python3 -c 'import torch' > /dev/null 2>&1") == 0;
  CliResult r = run_cli("bench --op attention --out " + out.string() +
                        " --target cpu --shapes 1x2x64x64 --causal no --rounds 2 --repeat 2 --impl tessel,torch");
  if (has_torch) {
    std::printf("python3 has torch: the PyTorch column is measured\n");
    ASSERT_EQ(r.status, 0) << r.output;
    std::string md = read_text(out / "results.md");
    EXPECT_NE(md.find("torch / tessel"), std::string::npos) << md;
    nlohmann::json j = nlohmann::json::parse(read_text(out / "results.json"));
    EXPECT_TRUE(j["summary"][0]["torch_over_tessel"].is_number()) << j["summary"].dump();
  } else {
    std::printf("python3 has no torch: the run stops with its error\n");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("PyTorch does not run under"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << "nothing is written before the peers are known to run";
  }
  fs::remove_all(out.parent_path());
}

TEST(AttentionBenchCli, UserErrorsAreNamed) {
  fs::path out = fresh_out();
  const std::string o = " --out " + out.string();
  struct Bad {
    std::string args, message;
  };
  const Bad cases[] = {
      {"bench --op attention", "--out DIR is required"},
      {"bench --op attention" + o + " --dtype bf16", "the cpu target runs fp32 attention only"},
      {"bench --op attention" + o + " --shapes 1x2x64", "shape '1x2x64': expected BxHxSxD"},
      {"bench --op attention" + o + " --shapes 1x2x0x64", "S in '1x2x0x64' '0': expected a positive integer"},
      {"bench --op attention" + o + " --impl tessel,cublas", "--impl 'cublas': expected tessel, torch"},
      {"bench --op attention" + o + " --impl torch,tessel", "tessel comes first"},
      {"bench --op attention" + o + " --target gpu", "--target 'gpu': expected cpu or cuda"},
      {"bench --op attention" + o + " --causal maybe", "--causal 'maybe': expected no, yes or both"},
      {"bench --op attention" + o + " --rounds 0", "--rounds '0': expected a positive integer"},
      {"bench --op attention" + o + " --tile 64x64x64", "unknown option --tile"},
      {"bench --op softmax" + o, "--op: only 'attention'"},
      {"bench --op attention --out /tmp", "output directory '/tmp' exists"},
  };
  for (const Bad& b : cases) {
    CliResult r = run_cli(b.args);
    EXPECT_EQ(r.status, 2) << b.args << "\n" << r.output;
    EXPECT_NE(r.output.find(b.message), std::string::npos) << b.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(out.parent_path());
  CliResult help = run_cli("bench --op attention --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("usage: tessel bench --op attention"), std::string::npos) << help.output;
}

}  // namespace
