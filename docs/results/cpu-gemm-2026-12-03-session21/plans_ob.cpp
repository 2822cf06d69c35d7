// In-process A/B of cpu GEMM plan variants beside OpenBLAS (cblas_sgemm): every
// variant prepared once, then R rounds (env R, default 12) that call each in turn;
// min and median per variant. A variant is "default" or KEY=VALUE[:KEY=VALUE...]
// with BK, BM, BN (tiles), parts (worker rows) or direct (0 or 1: A and B read in
// place, Plan::direct). Built in build/:
//   g++ -O2 -std=c++20 -I../include -I../src plans_ob.cpp -o plans_ob \
//     -Wl,-rpath,/usr/local/cuda/lib libtessel.a -ldl /usr/local/cuda/lib/libnvrtc.so \
//     /usr/local/cuda/lib/stubs/libcuda.so /lib/x86_64-linux-gnu/libopenblas.so.0
//   R=16 env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake OPENBLAS_NUM_THREADS=1 \
//     ./plans_ob 2000 2000 2000 1 default BN=512 "BM=1008:parts=42"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "ops/gemm.h"
#include "plan/plan.h"
using namespace tessel;
extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using Clock = std::chrono::steady_clock;
int main(int argc, char** argv) {
  int64_t m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  int threads = atoi(argv[4]);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : a) x = d(g); for (auto& x : b) x = d(g);
  std::vector<std::string> names;
  std::vector<PreparedGemm> preps;
  Plan base = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", threads);
  for (int i = 5; i < argc; ++i) {
    Plan p = base;
    std::string v = argv[i];
    if (v != "default") {
      // KEY=VALUE[:KEY=VALUE...]: BK, BM, BN (tiles) or parts (worker rows)
      size_t at = 0;
      while (at < v.size()) {
        size_t end = v.find(':', at); if (end == std::string::npos) end = v.size();
        std::string kv = v.substr(at, end - at); at = end + 1;
        size_t eq = kv.find('=');
        std::string key = kv.substr(0, eq); int64_t val = atoll(kv.substr(eq + 1).c_str());
        if (key == "parts") { p.workers = p.worker_rows = int(val); }
        else if (key == "direct") { p.direct = val != 0; }
        else p.tiles[key] = val;
      }
    }
    GemmOptions o; o.threads = threads; o.plan = p;
    preps.emplace_back(m, n, k, k, n, n, o);
    names.push_back(v + " [" + p.to_string() + "]");
  }
  std::vector<std::vector<double>> t(preps.size() + 1); names.push_back("openblas");
  for (int r = 0; r < (getenv("R") ? atoi(getenv("R")) : 12); ++r)
    for (size_t i = 0; i <= preps.size(); ++i) {
      size_t j = (i + r) % (preps.size() + 1);
      auto t0 = Clock::now();
      if (j == preps.size()) cblas_sgemm(101, 111, 111, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      else preps[j].run(1.0f, a.data(), b.data(), 0.0f, c.data());
      t[j].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  for (size_t i = 0; i <= preps.size(); ++i) {
    std::sort(t[i].begin(), t[i].end());
    printf("%-70s min %.2f med %.2f ms  (%.0f GF/s at min)\n", names[i].c_str(), t[i][0], t[i][t[i].size() / 2], 2e-6 * m * n * k / t[i][0]);
  }
}
