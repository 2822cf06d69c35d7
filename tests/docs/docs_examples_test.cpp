// Every example in README.md, docs/kernels.md and docs/ops.md runs. The documents
// follow these rules, and this file is where they are written down:
//
//  - A runnable command is a line of a ```sh block that starts with `build/tessel `
//    (a line ending in `\` continues on the next). A command that starts with
//    anything else (`scripts/test.sh`, `env ... build/tessel bench ...`) is left
//    alone: it is there to be read, not run here.
//  - It runs through /bin/sh from the source directory, with every `build/tessel`
//    replaced by the CLI of this build (TESSEL_CLI), so `# comments` stay comments.
//  - It must exit with status 0, or with N when the line ends with `# exit N` (a
//    command that shows a failure: the sim finding a race exits with 1).
//  - `--target cuda` needs the cuda target built (the CUDA toolkit) for `explain`,
//    and a GPU for anything else. Such commands run in tests of their own, which
//    skip, naming each command, where that is missing. Every other command must
//    stay quick: sim or cpu, small sizes.
//
// The README's C++ example is the function between the README EXAMPLE markers
// below: this file compiles it, runs it, and checks that README.md holds its text
// verbatim.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ops/library.h"
#include "tessel/tessel.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_driver.h"
#endif

namespace {

// ---- README EXAMPLE BEGIN ----
// Softmax of each row of x (m rows of n floats), compiled for the cpu target.
std::vector<float> softmax_rows(std::vector<float> x, int64_t m, int64_t n) {
  tessel::TileKernel k = tessel::softmax_kernel();
  tessel::Kernel softmax = tessel::compile(k, tessel::TargetKind::Cpu, {{"M", m}, {"N", n}});
  std::vector<float> y(m * n);
  tessel::KernelArgs args;
  args.tensors["X"] = tessel::TensorArg::host(x.data(), {m, n});
  args.tensors["Y"] = tessel::TensorArg::host(y.data(), {m, n});
  softmax.launch(args);  // M, N, ldx and ldy come from the shapes
  return y;
}
// ---- README EXAMPLE END ----

const char* const kDocuments[] = {"README.md", "docs/kernels.md", "docs/ops.md"};
const std::string kPrefix = "build/tessel";

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << "cannot read " << relative;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Command {
  std::string document;
  int line = 0;       // where the command starts
  std::string text;   // continuation lines joined
  int expected = 0;   // exit status
  std::string where() const { return document + ":" + std::to_string(line); }
};

// The runnable commands of one document (see the rules at the top).
std::vector<Command> commands_in(const std::string& document) {
  std::istringstream in(read_source(document));
  std::vector<Command> out;
  bool in_block = false, in_sh = false;
  Command pending;
  bool continuing = false;
  int number = 0;
  static const std::regex exit_marker(R"(#\s*exit\s+(\d+)\s*$)");
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      in_sh = !in_block && line == "```sh";
      in_block = !in_block;
      continuing = false;
      continue;
    }
    if (!in_sh) continue;
    if (!continuing) {
      pending = Command{document, number, "", 0};
    }
    bool more = !line.empty() && line.back() == '\\';
    pending.text += more ? line.substr(0, line.size() - 1) : line;
    continuing = more;
    if (more) continue;
    if (pending.text.rfind(kPrefix + " ", 0) != 0) continue;
    std::smatch m;
    if (std::regex_search(pending.text, m, exit_marker)) pending.expected = std::stoi(m[1]);
    out.push_back(pending);
  }
  return out;
}

std::vector<Command> all_commands() {
  std::vector<Command> all;
  for (const char* d : kDocuments)
    for (Command& c : commands_in(d)) all.push_back(std::move(c));
  return all;
}

bool on_cuda(const Command& c) { return c.text.find("--target cuda") != std::string::npos; }
bool compile_only(const Command& c) { return c.text.rfind(kPrefix + " explain ", 0) == 0; }

struct Outcome {
  int status = -1;
  std::string output;  // stdout and stderr together
};

Outcome run(const Command& c) {
  std::string cmd = c.text;
  // Past each replacement: the CLI's own path may end in "build/tessel" (CI's does).
  const std::string cli = TESSEL_CLI;
  for (size_t at = cmd.find(kPrefix); at != std::string::npos; at = cmd.find(kPrefix, at + cli.size()))
    cmd.replace(at, kPrefix.size(), cli);
  // The newline ends a trailing `# comment` before the redirection.
  std::string script = "cd '" + std::string(TESSEL_SOURCE_DIR) + "' && {\n" + cmd + "\n} 2>&1";
  Outcome o;
  FILE* f = popen(script.c_str(), "r");
  if (!f) return o;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) o.output.append(buf, n);
  int status = pclose(f);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

void expect_runs(const Command& c) {
  Outcome o = run(c);
  const size_t keep = 4000;
  std::string tail = o.output.size() > keep ? "..." + o.output.substr(o.output.size() - keep) : o.output;
  EXPECT_EQ(o.status, c.expected) << c.where() << ": " << c.text << "\n" << tail;
}

// The commands of `document` that need neither the cuda target nor a GPU.
void run_document(const std::string& document) {
  std::vector<Command> commands = commands_in(document);
  ASSERT_FALSE(commands.empty()) << document << " has no runnable command: the rules above changed?";
  for (const Command& c : commands)
    if (!on_cuda(c)) expect_runs(c);
}

TEST(DocsExamples, Readme) { run_document("README.md"); }
TEST(DocsExamples, KernelsGuide) { run_document("docs/kernels.md"); }
TEST(DocsExamples, OpsTable) { run_document("docs/ops.md"); }

// Why the cuda commands of a kind cannot run here ("" when they can).
std::string cuda_missing(bool needs_gpu) {
#ifdef TESSEL_WITH_CUDA
  std::string why;
  if (needs_gpu && !tessel::cuda_gpu_available(&why)) return "no GPU (" + why + ")";
  return "";
#else
  (void)needs_gpu;
  return "tessel was built without the CUDA toolkit";
#endif
}

void run_cuda_commands(bool needs_gpu) {
  std::vector<Command> commands;
  for (const Command& c : all_commands())
    if (on_cuda(c) && compile_only(c) != needs_gpu) commands.push_back(c);
  std::string why = cuda_missing(needs_gpu);
  if (!why.empty() && !commands.empty()) {
    std::string list;
    for (const Command& c : commands) list += "\n  " + c.where() + ": " + c.text;
    GTEST_SKIP() << why << "; not run:" << list;
  }
  for (const Command& c : commands) expect_runs(c);
}

// `explain ... --target cuda` emits and compiles CUDA C++ with NVRTC: no GPU needed.
TEST(DocsExamples, CudaCompileCommands) { run_cuda_commands(false); }
TEST(DocsExamples, GpuCommands) { run_cuda_commands(true); }

// The extraction itself: continuation lines join, other blocks and prefixes are
// left out, and `# exit N` sets the expected status.
TEST(DocsExamples, RulesPickTheRightLines) {
  for (const Command& c : all_commands()) {
    EXPECT_EQ(c.text.rfind(kPrefix + " ", 0), 0u) << c.where();
    EXPECT_EQ(c.text.find('\\'), std::string::npos) << c.where() << ": " << c.text;
  }
  // The README runs `tessel bench` behind `env`: a command to read, not run here.
  for (const Command& c : commands_in("README.md"))
    EXPECT_EQ(c.text.find(" bench "), std::string::npos) << c.where();
  bool expects_failure = false;
  for (const Command& c : commands_in("docs/kernels.md")) expects_failure |= c.expected == 1;
  EXPECT_TRUE(expects_failure) << "docs/kernels.md shows the sim finding a race (# exit 1)";
}

// The lines between the README EXAMPLE markers of this file.
std::string example_text() {
  std::string self = read_source("tests/docs/docs_examples_test.cpp");
  const std::string begin = "// ---- README EXAMPLE BEGIN ----\n", end = "// ---- README EXAMPLE END ----";
  size_t from = self.find(begin), to = self.find(end);
  EXPECT_NE(from, std::string::npos);
  EXPECT_NE(to, std::string::npos);
  if (from == std::string::npos || to == std::string::npos || to < from) return "";
  from += begin.size();
  return self.substr(from, to - from);
}

TEST(ReadmeExample, ReadmeHoldsTheFunctionVerbatim) {
  std::string example = example_text();
  ASSERT_GT(example.size(), 200u);
  std::string readme = read_source("README.md");
  EXPECT_NE(readme.find("```cpp\n#include \"ops/library.h\""), std::string::npos)
      << "the README's example starts with its includes";
  EXPECT_NE(readme.find(example), std::string::npos)
      << "README.md must hold, verbatim, the function between the README EXAMPLE markers of "
         "tests/docs/docs_examples_test.cpp:\n"
      << example;
}

TEST(ReadmeExample, ComputesASoftmax) {
  const int64_t m = 5, n = 77;
  std::vector<float> x(m * n);
  for (int64_t i = 0; i < m * n; ++i) x[i] = std::sin(0.37 * i) * 4;
  std::vector<float> y = softmax_rows(x, m, n);
  for (int64_t r = 0; r < m; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c) max = std::max(max, double(x[r * n + c]));
    for (int64_t c = 0; c < n; ++c) sum += std::exp(double(x[r * n + c]) - max);
    for (int64_t c = 0; c < n; ++c)
      EXPECT_NEAR(y[r * n + c], std::exp(double(x[r * n + c]) - max) / sum, 1e-6) << r << ", " << c;
  }
}

}  // namespace
