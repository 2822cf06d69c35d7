// What a cached call of tessel::gemm costs beyond its kernel, on the cpu target.
// Per shape, three ways to run the same compiled kernel on the same operands:
//   kernel  the emitted function through CpuKernel::execute on arguments flattened
//           once (what any launch ends in: no checks, no lookups);
//   bound   a BoundLaunch (Kernel::bind once): per call set_tensor x 3,
//           set_scalar x 2 and run() (LaunchOptions::timed false), as a caller
//           of the public API would;
//   gemm    tessel::gemm(...) with default options (its per-thread memo);
//   quiet   tessel::gemm(...) with GemmOptions::report false (no plan copy, no
//           clock reads);
//   prepared  PreparedGemm::run (the shape prepared once).
// Every way's complete output is checked against the FP64 oracle first (C
// poisoned with NaN; with --beta B, C = A B + B C from random C, which the timed
// calls then keep accumulating into). Then R rounds; each round times every way over `calls`
// calls, in an order rotated from round to round; a way's time in a round is wall
// time per call. Printed: the median and minimum over rounds, and the paired
// per-round differences from kernel.
//
//   build/bench_gemm_call [--rounds R] [--calls C] [--threads T] [--beta B] [MxNxK ...]
//   build/bench_gemm_call --only kernel|bound|gemm|quiet|prepared --calls C [MxNxK]   (for perf record)
// (default 32x32x32 64x64x64, R = 21, C = 20000, one thread, beta 0).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/line_aligned.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/tessel.h"

using namespace tessel;
using tessel::bench::line_aligned_copy;
using tessel::bench::LineAlignedFloats;

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t m, n, k;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

struct Way {
  const char* name;
  std::function<void()> call;
};

[[noreturn]] void usage() {
  std::fputs("usage: bench_gemm_call [--rounds R] [--calls C] [--threads T] [--beta B]\n"
             "                       [--only kernel|bound|gemm|quiet|prepared] [MxNxK ...]\n",
             stderr);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 21, threads = 1;
  long calls = 20000;
  float beta = 0;
  std::string only;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : (usage(), std::string()); };
    if (a == "--rounds") rounds = std::atoi(value().c_str());
    else if (a == "--calls") calls = std::atol(value().c_str());
    else if (a == "--threads") threads = std::atoi(value().c_str());
    else if (a == "--only") only = value();
    else if (a == "--beta") {
      const std::string v = value();
      char* end = nullptr;
      beta = std::strtof(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(beta)) usage();
    }
    else {
      Shape s{};
      if (std::sscanf(a.c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3 || s.m < 1 || s.n < 1 || s.k < 1) usage();
      shapes.push_back(s);
    }
  }
  if (rounds < 1 || calls < 1) usage();
  if (shapes.empty()) shapes = {{32, 32, 32}, {64, 64, 64}};
  if (only.empty())
    std::printf("per call, ns: median over %d rounds of %ld calls (min); threads %d, beta %g\n", rounds, calls, threads,
                beta);

  for (const Shape& s : shapes) {
    std::mt19937_64 rng(1);
    std::vector<float> a_random(s.m * s.k), b_random(s.k * s.n);
    fill_random(a_random, rng);
    fill_random(b_random, rng);
    // On cache lines, as `tessel bench` has them: a vector of 1 MiB sat 16 bytes off
    // one, which cost the plans that read B in place several percent.
    LineAlignedFloats a = line_aligned_copy(a_random), b = line_aligned_copy(b_random);
    LineAlignedFloats c(s.m * s.n);
    std::vector<float> c_random(s.m * s.n);
    fill_random(c_random, rng);
    std::vector<double> want = gemm_oracle(s.m, s.n, s.k, 1.0, a.data(), s.k, b.data(), s.n, beta,
                                           beta == 0 ? nullptr : c_random.data(), s.n);

    GemmOptions options;
    options.threads = threads;
    GemmReport first = gemm(s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, beta, c.data(), s.n, options);
    // The same compiled kernel (both caches hit), bound the two other ways.
    Kernel kernel = compile(gemm_kernel(), first.plan);
    KernelArgs args;
    args.tensors["A"] = TensorArg::host(a.data(), {s.m, s.k});
    args.tensors["B"] = TensorArg::host(b.data(), {s.k, s.n});
    args.tensors["C"] = TensorArg::host(c.data(), {s.m, s.n});
    args.scalars = {{"alpha", 1.0}, {"beta", beta}};
    BoundLaunch bound = kernel.bind(args);
    LaunchOptions lo;
    lo.threads = threads;
    lo.timed = false;
    GemmOptions quiet = options;
    quiet.report = false;
    std::shared_ptr<const CpuKernel> cpu = compile_cpu(kernel.program());
    LaunchArgs flat;
    flat.sizes = {{"M", s.m}, {"N", s.n}, {"K", s.k}, {"lda", s.k}, {"ldb", s.n}, {"ldc", s.n}};
    flat.scalars = {{"alpha", 1.0}, {"beta", beta}};
    flat.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
    CpuLaunch launch = cpu->bind(flat);
    PreparedGemm prepared(s.m, s.n, s.k, s.k, s.n, s.n, options);

    std::vector<Way> ways = {
        {"kernel", [&] { cpu->execute(launch, threads); }},
        {"bound",
         [&] {
           bound.set_tensor(0, a.data());
           bound.set_tensor(1, b.data());
           bound.set_tensor(2, c.data());
           bound.set_scalar(0, 1.0);
           bound.set_scalar(1, beta);
           bound.run(lo);
         }},
        {"gemm", [&] { gemm(s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, beta, c.data(), s.n, options); }},
        {"quiet", [&] { gemm(s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, beta, c.data(), s.n, quiet); }},
        {"prepared", [&] { prepared.run(1.0f, a.data(), b.data(), beta, c.data()); }},
    };
    for (Way& w : ways) {
      if (beta == 0)
        std::fill(c.begin(), c.end(), NAN);
      else
        std::copy(c_random.begin(), c_random.end(), c.begin());
      w.call();
      double err = gemm_relative_error(s.m, s.n, c.data(), s.n, want);
      if (!(err <= gemm_error_bound(s.k))) {
        std::fprintf(stderr, "%ldx%ldx%ld %s: relative error %g above the bound %g\n", s.m, s.n, s.k, w.name, err,
                     gemm_error_bound(s.k));
        return 1;
      }
    }
    if (!only.empty()) {
      auto it = std::find_if(ways.begin(), ways.end(), [&](const Way& w) { return only == w.name; });
      if (it == ways.end()) usage();
      for (long i = 0; i < calls; ++i) it->call();
      return 0;
    }

    std::vector<std::vector<double>> ns(ways.size());
    for (int r = 0; r < rounds; ++r)
      for (size_t j = 0; j < ways.size(); ++j) {
        size_t w = (j + r) % ways.size();
        auto start = Clock::now();
        for (long i = 0; i < calls; ++i) ways[w].call();
        ns[w].push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / double(calls));
      }
    std::printf("%ldx%ldx%ld:", s.m, s.n, s.k);
    for (size_t w = 0; w < ways.size(); ++w)
      std::printf("  %s %.0f (%.0f)", ways[w].name, median(ns[w]), *std::min_element(ns[w].begin(), ns[w].end()));
    std::printf("  | minus kernel:");
    for (size_t w = 1; w < ways.size(); ++w) {
      std::vector<double> over;
      for (int r = 0; r < rounds; ++r) over.push_back(ns[w][r] - ns[0][r]);
      std::printf(" %s %.0f", ways[w].name, median(over));
    }
    std::printf("\n");
  }
  return 0;
}
