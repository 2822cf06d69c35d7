// The FP64 oracle every GEMM check compares against, and the error bound used by
// tests, the CLI and the benchmarks.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace tessel {

// C64 = alpha * A * B + beta * C, in double, over the complete M x N output
// (row-major, ldc64 = N). When beta == 0 the input C is not read.
std::vector<double> gemm_oracle(int64_t m, int64_t n, int64_t k, double alpha, const float* a,
                                int64_t lda, const float* b, int64_t ldb, double beta,
                                const float* c, int64_t ldc);

// ||C - C64||_F / ||C64||_F over all M x N elements (absolute when C64 is all
// zero); any non-finite element of C makes the error infinite.
double gemm_relative_error(int64_t m, int64_t n, const float* c, int64_t ldc,
                           const std::vector<double>& oracle);

// The bound a correct fp32 GEMM meets: float rounding grows with sqrt(K) for
// random data; the factor leaves room for blocked summation orders.
double gemm_error_bound(int64_t k);

// Uniform values in [-1, -1/8] U [1/8, 1]: random, never zero.
void fill_random(std::vector<float>& v, std::mt19937_64& rng);

}  // namespace tessel
