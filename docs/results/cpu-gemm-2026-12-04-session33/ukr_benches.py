#!/usr/bin/env python3
# Writes the micro-kernel benchmarks of the thirty-third session (docs/results/
# cpu-gemm-2026-12-04-session33/README.md) into the current directory:
#   ukr_broadcast_bench.cpp   11x32 with A and B in L1: k0 as GCC writes it (a broadcast
#                             register, then 2 FMAs), k1 with each FMA's own embedded
#                             broadcast ({1to16}), and an FMA-only loop for the peak; C's
#                             row stride the constant 32.
#   ukr_broadcast_bench_ldc.cpp  the same with C's row stride an argument.
#   ukr_b_from_l2_l3_bench.cpp  12x32 with embedded broadcasts over PANELS 256x32 B panels
#                             (16 panels, 512 KiB, stay in L2; 64 and more come from L3),
#                             prefetching B 0, 8, 16 or 32 k steps ahead.
# Build and run each with
#   g++ -O2 -march=x86-64-v4 -mprefer-vector-width=512 X.cpp -o x && ./x [PANELS]
HEAD = """#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
typedef float vf __attribute__((vector_size(64)));
typedef float vfu __attribute__((vector_size(64), aligned(4)));
"""
FMA = 'asm("vfmadd231ps %2%{{1to16%}}, %1, %0" : "+v"({c}) : "v"({b}), "m"(*p));'


# ldc: C's row stride, a constant, or None for a run-time argument.
def kernel(name, rows, embedded, accumulate, prefetch=0, ldc=None):
    s = (f"__attribute__((noinline)) void {name}(int64_t kc, const float* a, const float* b, float* c, int64_t lda,"
         f" int64_t ldb{'' if ldc else ', int64_t ldc'}) {{\n")
    s += "".join(f"  vf c{r}0 = {{}}, c{r}1 = {{}};\n" for r in range(rows))
    s += "  for (int64_t k = 0; k < kc; ++k) {\n"
    s += "    vf b0 = *(const vfu*)(b + k * ldb), b1 = *(const vfu*)(b + k * ldb + 16);\n"
    if prefetch:
        s += f"    __builtin_prefetch(b + (k + {prefetch}) * ldb); __builtin_prefetch(b + (k + {prefetch}) * ldb + 16);\n"
    for r in range(rows):
        if embedded:
            s += f"    {{ const float* p = a + {r} * lda + k; {FMA.format(c=f'c{r}0', b='b0')} {FMA.format(c=f'c{r}1', b='b1')} }}\n"
        else:
            s += f"    {{ float x = a[{r} * lda + k]; c{r}0 += x * b0; c{r}1 += x * b1; }}\n"
    s += "  }\n"
    op = "+=" if accumulate else "="
    ld = ldc or "ldc"
    s += "".join(f"  *(vfu*)(c + {r} * {ld}) {op} c{r}0; *(vfu*)(c + {r} * {ld} + 16) {op} c{r}1;\n" for r in range(rows))
    return s + "}\n"


def peak():
    s = "__attribute__((noinline)) void peak(int64_t n, float* c) {\n  vf x = {1}, y = {1};\n"
    s += "".join(f"  vf p{r} = {{}};\n" for r in range(12))
    s += "  for (int64_t i = 0; i < n; ++i) {\n"
    s += "".join(f'    asm("vfmadd231ps %1, %2, %0" : "+v"(p{r}) : "v"(x), "v"(y));\n' for r in range(12))
    return s + "  }\n" + "".join(f"  c[{r}] = p{r}[0];\n" for r in range(12)) + "}\n"


BROADCAST_MAIN = """int main() {
  static float a[32 * 64], b[64 * 32], c[32 * 32];
  for (int i = 0; i < 32 * 64; ++i) a[i] = b[i] = 0.001f * (i % 7);
  for (int v = 0; v < 3; ++v) {
    double best = 1e9;
    for (int rep = 0; rep < 20; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      const int N = 100000;
      for (int i = 0; i < N; ++i) {
        if (v == 0) k0(32, a, b, c, 32, 32 LDC); else if (v == 1) k1(32, a, b, c, 32, 32 LDC); else peak(32 * 22 / 12, c);
        asm volatile("" ::: "memory");
      }
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / N;
      if (t < best) best = t;
    }
    printf("variant %d: %.2f ns per 32-k call, %.1f GFLOP/s\\n", v, best * 1e9, 2.0 * 11 * 32 * 32 / best / 1e9);
  }
}
"""
PANELS_MAIN = """int main(int argc, char** argv) {
  const int KC = 256, PANELS = argc > 1 ? atoi(argv[1]) : 16, ROWS = 24;
  std::vector<float> a(ROWS * KC, 0.01f), b(PANELS * KC * 32, 0.02f), c(ROWS * PANELS * 32, 0.f);
  void (*const kernels[])(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t) = {k0, k8, k16, k32};
  const int ahead[] = {0, 8, 16, 32};
  for (int v = 0; v < 4; ++v) {
    double best = 1e9;
    for (int rep = 0; rep < 30; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < 20; ++it)
        for (int p = 0; p < PANELS; ++p)
          for (int r = 0; r < ROWS; r += 12)
            kernels[v](KC, a.data() + r * KC, b.data() + p * KC * 32, c.data() + r * PANELS * 32 + p * 32, KC, 32, PANELS * 32);
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20;
      if (t < best) best = t;
    }
    printf("pf %d: %.1f GFLOP/s\\n", ahead[v], 2.0 * ROWS * PANELS * 32 * KC / best / 1e9);
  }
}
"""
for name, ldc in (("ukr_broadcast_bench.cpp", "32"), ("ukr_broadcast_bench_ldc.cpp", None)):
    with open(name, "w") as f:
        f.write(HEAD + kernel("k0", 11, False, False, ldc=ldc) + kernel("k1", 11, True, False, ldc=ldc) + peak() +
                BROADCAST_MAIN.replace(" LDC", "" if ldc else ", 32"))
with open("ukr_b_from_l2_l3_bench.cpp", "w") as f:
    panels = "".join(kernel(f"k{pf}", 12, True, True, pf) for pf in (0, 8, 16, 32))
    f.write(HEAD + panels + PANELS_MAIN)
