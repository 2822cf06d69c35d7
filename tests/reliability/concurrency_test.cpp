// tessel::gemm from many threads at once: eight threads run different GEMMs on the
// cpu target (different shapes and plans, some sharing a plan, different thread
// counts), first with every cache cold so that they compile at the same time, then
// warm. Every output must be bit-identical to the same GEMM run alone.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops/gemm.h"

namespace tessel::testing {
namespace {

struct Job {
  int64_t m, n, k;
  std::optional<Plan> plan;
  int threads;
  float alpha, beta;
};

Plan tile(int64_t bm, int64_t bn, int64_t bk) {
  Plan p;
  p.tiles = {{"BM", bm}, {"BN", bn}, {"BK", bk}};
  return p;
}

// Operands of one job, made from its index; C is its initial value.
struct Data {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
};

Data data_for(const Job& j, uint32_t seed) {
  Data d{j.k + 1, j.n + 3, j.n + 2, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  d.a.resize(j.m * d.lda);
  d.b.resize(j.k * d.ldb);
  d.c.resize(j.m * d.ldc);
  for (auto* v : {&d.a, &d.b, &d.c})
    for (float& x : *v) x = u(rng);
  return d;
}

// C after the job, starting from its initial value.
std::vector<float> run(const Job& j, const Data& d) {
  std::vector<float> c = d.c;
  GemmOptions o;
  o.target = TargetKind::Cpu;
  o.plan = j.plan;
  o.threads = j.threads;
  gemm(j.m, j.n, j.k, j.alpha, d.a.data(), d.lda, d.b.data(), d.ldb, j.beta, c.data(), d.ldc, o);
  return c;
}

TEST(Concurrency, EightThreadsOfDifferentGemmsMatchSingleThreadedRuns) {
  char dir[] = "/tmp/tessel-test-concurrency-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("TESSEL_CACHE_DIR", dir, 1);  // cold on disk too

  const Plan shared_a = tile(24, 64, 32), shared_b = tile(48, 32, 16);
  const std::vector<Job> jobs = {
      {77, 130, 45, shared_a, 1, 1.0f, 0.0f},   {96, 64, 32, shared_a, 2, 0.5f, 1.0f},
      {5, 200, 61, shared_a, 0, -1.0f, 0.25f},  {100, 33, 17, shared_b, 1, 1.0f, 1.0f},
      {48, 96, 80, shared_b, 3, 2.0f, 0.0f},    {129, 71, 9, std::nullopt, 2, 1.0f, -1.0f},
      {13, 13, 130, std::nullopt, 1, 1.5f, 0.0f}, {60, 250, 40, tile(12, 32, 8), 2, 1.0f, 0.5f},
  };
  ASSERT_EQ(jobs.size(), 8u);
  std::vector<Data> data;
  for (size_t i = 0; i < jobs.size(); ++i) data.push_back(data_for(jobs[i], 100 + i));

  // All threads start together, each running its job `rounds` times.
  auto concurrently = [&](int rounds) {
    std::vector<std::vector<std::vector<float>>> out(jobs.size());
    std::vector<std::string> errors(jobs.size());
    std::barrier start(static_cast<std::ptrdiff_t>(jobs.size()));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i)
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        try {
          for (int r = 0; r < rounds; ++r) out[i].push_back(run(jobs[i], data[i]));
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(errors[i], "") << "job " << i;
    return out;
  };

  auto cold = concurrently(1);  // every kernel compiles while the others do
  std::vector<std::vector<float>> alone;
  for (size_t i = 0; i < jobs.size(); ++i) alone.push_back(run(jobs[i], data[i]));
  auto warm = concurrently(3);

  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    std::string name = "job " + std::to_string(i) + " (" + std::to_string(j.m) + "x" +
                       std::to_string(j.n) + "x" + std::to_string(j.k) + ")";
    for (const auto* runs : {&cold, &warm})
      for (const auto& c : (*runs)[i]) {
        ASSERT_EQ(c.size(), alone[i].size()) << name;
        EXPECT_EQ(std::memcmp(c.data(), alone[i].data(), c.size() * sizeof(float)), 0)
            << name << " differs from the same GEMM run alone";
      }
    // And the single-threaded run itself is a GEMM: a spot check of one element.
    const Data& d = data[i];
    int64_t r = j.m / 2, col = j.n / 3;
    double want = j.beta * d.c[r * d.ldc + col];
    for (int64_t kk = 0; kk < j.k; ++kk)
      want += double(j.alpha) * d.a[r * d.lda + kk] * d.b[kk * d.ldb + col];
    EXPECT_NEAR(alone[i][r * d.ldc + col], want, 1e-4 * j.k) << name;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessel::testing
