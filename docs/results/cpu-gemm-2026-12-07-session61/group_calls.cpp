// Times units' tessel_group alone, called in turn on the same buffers (the call the
// sixty-first session changed). Each argument after M N K BETA is an emitted unit
// built as a shared object (README.md has the recipe); every unit is bound to
// tessel's own support table, so strips and edge blocks are the real ones.
//   g++ -O2 -std=c++20 -Isrc group_calls.cpp build/libtessel.a -ldl -lpthread -o group_calls
//   ./group_calls M N K BETA unit_a.so unit_b.so ...   (median of 15 rounds, ns a call)
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "target/cpu/cpu_support.h"

using Group = void (*)(const int64_t*, const double*, float* const*, const int64_t*, float*);
using Bind = void (*)(void* const*);

int main(int argc, char** argv) {
  if (argc < 6) return std::puts("usage: group_calls M N K BETA unit.so..."), 2;
  const long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  std::vector<Group> units;
  for (int i = 5; i < argc; ++i) {
    void* h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return std::printf("%s\n", dlerror()), 1;
    reinterpret_cast<Bind>(dlsym(h, "tessel_bind"))(tessel::cpu_support_table());
    units.push_back(reinterpret_cast<Group>(dlsym(h, "tessel_group")));
  }
  auto floats = [](long count) {  // on 64 bytes, as the bench's buffers
    float* p = static_cast<float*>(aligned_alloc(64, (count * 4 + 63) / 64 * 64 + 64));
    for (long i = 0; i < count; ++i) p[i] = 0.5f + 0.001f * float(i % 7);
    return p;
  };
  float *a = floats(m * k), *b = floats(k * n), *c = floats(m * n), *scratch = floats(1 << 16);
  const int64_t sizes[6] = {m, n, k, k, n, n}, origin[8] = {};
  const double scalars[2] = {1.0, atof(argv[4])};
  float* const tensors[3] = {a, b, c};
  const long calls = std::max(2000L, 20000000L / (m * n * k + 100));
  std::vector<std::vector<double>> ns(units.size());
  for (int round = 0; round < 15; ++round)
    for (size_t i = 0; i < units.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      for (long j = 0; j < calls; ++j) units[i](sizes, scalars, tensors, origin, scratch);
      ns[i].push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                      calls);
    }
  for (size_t i = 0; i < units.size(); ++i) {
    std::sort(ns[i].begin(), ns[i].end());
    std::printf("%s: %.2f ns\n", argv[5 + i], ns[i][7]);
  }
}
