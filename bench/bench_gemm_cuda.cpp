// tessel's cuda GEMM vs cuBLAS, in one process, on device pointers.
//   bench_gemm_cuda [--quick] [--json FILE] [--shapes MxNxK,...] [--dtypes ...] [--plan SPEC]... [--beta B]
// For each precision and shape: host-wall (calls issued back to back, then one
// synchronize; total / calls, launch included: the seed's method) and device time
// (CUDA events around each call), medians of 5 rounds with tessel and cuBLAS
// alternating in each round. Before timing, tessel's output is checked against
// cuBLAS's (relative Frobenius difference; over 1e-2 marks the row WRONG and the
// exit status 1). cuBLAS: fp32 = cublasSgemm with default
// math (no tf32), tf32 = cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32, bf16/fp16
// = cublasGemmEx with 16-bit A and B, fp32 C and compute. Each --plan SPEC (the form
// of `tessel bench --plan`, applied to the default plan of each shape) adds a row of
// that plan beside cuBLAS; without one, the default plan runs. An item `split=S` in a
// SPEC runs K in S slices (GemmOptions::split_k; 1: none): alone, on the default plan;
// beside plan items (`tile=192x128x64,workers=3,split=2`), on that plan. An item
// `stream_k` runs stream-K (GemmOptions::stream_k) the same way. --beta B (default 0)
// runs C = A B + beta C with beta = B on both sides, from one random C (with 0,
// tessel's C starts as NaN).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/plan_spec.h"
#include "bench/shape.h"
#include "cuda_timing.h"
#include "ops/gemm.h"
#include "ops/gemm_reference.h"

using namespace tessel;

namespace {

void ck(cudaError_t e, const char* what) { tessel_bench::cuda_timing_check(e, what); }
void ck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cublas status %d\n", what, int(s));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using tessel_bench::Timing;

// Host-wall per call over a batch sized to ~20 ms (at most 2000 calls), and device time per call.
Timing time_calls(const std::function<void()>& call, double guess_us) {
  return tessel_bench::time_calls(call, guess_us, {20000, 2000}, median);
}

std::vector<char> stored(const std::vector<float>& v, GemmPrecision p) {
  DType t = storage_dtype(p);
  std::vector<char> out(v.size() * dtype_bytes(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) std::memcpy(&out[i * 4], &v[i], 4);
    else {
      uint16_t h = t == DType::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// The slices of a spec's `split=S` item (S >= 1), or -1 without one; `plan_items`
// gets the spec's other items (a plan spec, empty for none) and *stream_k whether
// it has a `stream_k` item.
int split_k_of(const std::string& spec, std::string* plan_items = nullptr, bool* stream_k = nullptr) {
  int slices = -1;
  std::string rest;
  for (const std::string& item : bench::split(spec, ',')) {
    if (item == "stream_k") {
      if (stream_k) *stream_k = true;
    } else if (item.rfind("split=", 0) == 0) {
      slices = std::atoi(item.c_str() + 6);
      if (slices < 1) throw std::invalid_argument("--plan " + spec + ": S must be at least 1");
    } else {
      rest += (rest.empty() ? "" : ",") + item;
    }
  }
  if (plan_items) *plan_items = rest;
  return slices;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path, shape_list, dtype_list;
  std::vector<std::string> plan_specs;
  float beta = 0;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--quick") quick = true;
    else if (s == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (s == "--shapes" && i + 1 < argc) shape_list = argv[++i];
    else if (s == "--dtypes" && i + 1 < argc) dtype_list = argv[++i];
    else if (s == "--plan" && i + 1 < argc) plan_specs.push_back(argv[++i]);
    else if (s == "--beta" && i + 1 < argc) {
      char* end = nullptr;
      beta = std::strtof(argv[++i], &end);
      if (*argv[i] == 0 || *end != 0 || !std::isfinite(beta)) {
        std::fprintf(stderr, "bench_gemm_cuda: --beta %s: want a finite number\n", argv[i]);
        return 2;
      }
    }
    else {
      std::fprintf(stderr,
                   "usage: bench_gemm_cuda [--quick] [--json FILE] [--shapes MxNxK,...] [--beta B]\n"
                   "                       [--dtypes fp32,tf32,bf16,fp16] [--plan SPEC]... (SPEC: tessel bench --plan's form)\n");
      return 2;
    }
  }
  std::vector<std::array<int64_t, 3>> shapes = {{32, 32, 32},     {128, 128, 128},   {512, 512, 512},
                                                {1024, 1024, 1024}, {256, 1024, 128}, {1024, 128, 256},
                                                {127, 193, 61},   {513, 257, 129},   {2048, 2048, 2048},
                                                {4096, 4096, 4096}, {8192, 8192, 8192}};
  if (quick) shapes = {{32, 32, 32}, {127, 193, 61}, {4096, 4096, 4096}};
  std::vector<GemmPrecision> precisions = {GemmPrecision::F32, GemmPrecision::TF32, GemmPrecision::BF16};
  try {
    if (!shape_list.empty()) {
      shapes.clear();
      for (const bench::Shape& sh : bench::parse_shape_list(shape_list)) shapes.push_back({sh.m, sh.n, sh.k});
    }
    if (!dtype_list.empty()) {
      precisions.clear();
      for (const std::string& item : bench::split(dtype_list, ',')) precisions.push_back(parse_precision(item));
    }
    for (const std::string& spec : plan_specs) {  // a malformed spec fails here, before any GPU work
      std::string plan_items;
      split_k_of(spec, &plan_items);
      if (plan_items.empty()) continue;
      Plan probe = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90a");
      bench::apply_plan_spec(plan_items, probe);
    }
    if (plan_specs.empty()) plan_specs.push_back("");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm_cuda: %s\n", e.what());
    return 2;
  }
  cublasHandle_t handle;
  ck(cublasCreate(&handle), "cublasCreate");
  FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
  // Both sides round A and B alike and accumulate in fp32, so they differ by the
  // order of the sums alone; a larger difference is a wrong answer, marked in its row
  // and in the exit status.
  const double kWrongDiff = 1e-2;
  bool wrong = false;
  cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, 0), "props");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("device %s, %d SMs, driver API %d\n", prop.name, prop.multiProcessorCount, driver);
  std::printf("%-6s %-16s %12s %12s %12s %12s %8s %8s %9s %9s\n", "dtype", "shape", "tessel host", "cublas host",
              "tessel dev", "cublas dev", "host x", "dev x", "TF/s", "diff");
  for (GemmPrecision p : precisions)
    for (auto [m, n, k] : shapes)
      for (const std::string& spec : plan_specs) {
        std::mt19937_64 rng(m * 31 + n * 7 + k);
        std::vector<float> A(m * k), B(k * n);
        fill_random(A, rng);
        fill_random(B, rng);
        std::vector<char> a = stored(A, p), b = stored(B, p);
        void *da, *db;
        float *dc_t, *dc_c;
        ck(cudaMalloc(&da, a.size()), "malloc");
        ck(cudaMalloc(&db, b.size()), "malloc");
        ck(cudaMalloc(&dc_t, m * n * 4), "malloc");
        ck(cudaMalloc(&dc_c, m * n * 4), "malloc");
        ck(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice), "copy");
        ck(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice), "copy");
        if (beta == 0) {
          ck(cudaMemset(dc_t, 0xff, m * n * 4), "poison");  // NaN: tessel must write all of C
        } else {
          std::vector<float> C(m * n);
          fill_random(C, rng);
          ck(cudaMemcpy(dc_t, C.data(), m * n * 4, cudaMemcpyHostToDevice), "copy");
          ck(cudaMemcpy(dc_c, C.data(), m * n * 4, cudaMemcpyHostToDevice), "copy");
        }
        GemmOptions o;
        o.target = TargetKind::Cuda;
        o.precision = p;
        o.device_pointers = true;
        std::string plan_items;
        if (const int slices = split_k_of(spec, &plan_items, &o.stream_k); slices >= 0) o.split_k = slices;
        if (!plan_items.empty()) {
          o.plan = default_gemm_plan(TargetKind::Cuda, m, n, k, p);
          bench::apply_plan_spec(plan_items, *o.plan);
        }
        const float alpha = 1;
        auto tessel_call = [&] {
          gemm(m, n, k, alpha, static_cast<const float*>(da), k, static_cast<const float*>(db), n, beta, dc_t, n, o);
        };
        // Row-major C = A B is column-major C^T = B^T A^T.
        auto cublas_call = [&] {
          if (p == GemmPrecision::F32) {
            ck(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, static_cast<const float*>(db), n,
                           static_cast<const float*>(da), k, &beta, dc_c, n), "sgemm");
          } else {
            cudaDataType t = p == GemmPrecision::TF32   ? CUDA_R_32F
                             : p == GemmPrecision::BF16 ? CUDA_R_16BF
                                                        : CUDA_R_16F;
            cublasComputeType_t ct = p == GemmPrecision::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
            ck(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, db, t, n, da, t, k, &beta, dc_c,
                            CUDA_R_32F, n, ct, CUBLAS_GEMM_DEFAULT), "gemmex");
          }
        };
        tessel_call();  // compile, load, first run
        cublas_call();
        ck(cudaDeviceSynchronize(), "first run");
        std::vector<float> ct(m * n), cc(m * n);
        ck(cudaMemcpy(ct.data(), dc_t, m * n * 4, cudaMemcpyDeviceToHost), "copy");
        ck(cudaMemcpy(cc.data(), dc_c, m * n * 4, cudaMemcpyDeviceToHost), "copy");
        double num = 0, den = 0;
        for (int64_t i = 0; i < m * n; ++i) {
          double d = double(ct[i]) - cc[i];
          num += std::isfinite(ct[i]) ? d * d : INFINITY;
          den += double(cc[i]) * cc[i];
        }
        double diff = std::sqrt(num / den);
        double guess = 2.0 * m * n * k / 30e6 + 5;  // us at ~30 TF/s plus launch
        std::vector<double> th, ch, td, cd;
        for (int round = 0; round < 5; ++round) {
          bool tessel_first = round % 2 == 0;
          for (int side = 0; side < 2; ++side) {
            bool t = (side == 0) == tessel_first;
            Timing x = time_calls(t ? std::function<void()>(tessel_call) : std::function<void()>(cublas_call), guess);
            (t ? th : ch).push_back(x.host_us);
            (t ? td : cd).push_back(x.dev_us);
          }
        }
        double mth = median(th), mch = median(ch), mtd = median(td), mcd = median(cd);
        double tflops = 2.0 * m * n * k / (mtd * 1e6);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)m, (long)n, (long)k);
        const bool off = !(diff <= kWrongDiff);
        wrong |= off;
        std::printf("%-6s %-16s %10.2fus %10.2fus %10.2fus %10.2fus %8.3f %8.3f %9.1f %9.2g %s%s\n", precision_name(p),
                    shape, mth, mch, mtd, mcd, mch / mth, mcd / mtd, tflops, diff, spec.c_str(),
                    off ? "  WRONG: tessel's output differs from cuBLAS's" : "");
        std::fflush(stdout);
        if (json)
          std::fprintf(json,
                       "{\"dtype\": \"%s\", \"m\": %ld, \"n\": %ld, \"k\": %ld, \"tessel_host_us\": %.3f, "
                       "\"cublas_host_us\": %.3f, \"tessel_dev_us\": %.3f, \"cublas_dev_us\": %.3f, "
                       "\"host_ratio\": %.4f, \"dev_ratio\": %.4f, \"tessel_tflops\": %.2f, \"diff_vs_cublas\": %.3g, "
                       "\"plan\": \"%s\"}\n",
                       precision_name(p), (long)m, (long)n, (long)k, mth, mch, mtd, mcd, mch / mth, mcd / mtd, tflops,
                       diff,
                       (o.plan ? *o.plan : default_gemm_plan(TargetKind::Cuda, m, n, k, p)).to_string().c_str());
        cudaFree(da);
        cudaFree(db);
        cudaFree(dc_t);
        cudaFree(dc_c);
      }
  if (json) std::fclose(json);
  cublasDestroy(handle);
  if (wrong) std::fprintf(stderr, "bench_gemm_cuda: some outputs differ from cuBLAS's by more than %g\n", kWrongDiff);
  return wrong ? 1 : 0;
}
