// Prototype (thirtieth session): tessel's default bf16 kernel for 128x256 tiles, as
// emitted, against the same kernel in clusters of two blocks along M that multicast
// B's halves (kernels.cu, made by mk.py), and cuBLAS. Device time by events, median
// of interleaved rounds; both outputs compared with cuBLAS's.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernels.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { printf("%s: %d\n", #x, (int)e); exit(1); } } while (0)

static CUtensorMap make_map(const void* base, int64_t rows, int64_t cols, int64_t ld, int box_rows, int box_cols) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)(ld * 2)};
  cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
  cuuint32_t es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

int main(int argc, char** argv) {
  cublasHandle_t h;
  cublasCreate(&h);
  const int smem = 218176;
  CK(cudaFuncSetAttribute(tessel_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  typedef void (*KernelFn)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, double, double, const unsigned short*,
                           const unsigned short*, float*, const tsl_tensor_map, const tsl_tensor_map);
  const KernelFn fns[] = {tessel_kernel, tessel_kernel_c2, tessel_kernel_c2nomc, tessel_kernel_c2def, tessel_kernel_c2spread};
  const char* names[] = {"plain", "c2", "c2nomc", "c2def", "c2spread"};
  const int nk = 5;
  for (int v = 0; v < nk; ++v) CK(cudaFuncSetAttribute(fns[v], cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(13, 10);
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = smem;
    int clusters = -1;
    CK(cudaOccupancyMaxActiveClusters(&clusters, (void*)tessel_kernel_c2, &cfg));
    printf("max active clusters of 2: %d\n", clusters);
  }
  printf("%-16s %10s", "shape", "cublas us");
  for (int v = 0; v < nk; ++v) printf(" %9s x %9s", names[v], "diff");
  printf("\n");
  for (int a = 1; a < argc; ++a) {
    int64_t M, N, K;
    if (sscanf(argv[a], "%ldx%ldx%ld", &M, &N, &K) != 3) return 2;
    std::vector<__nv_bfloat16> ha(M * K), hb(K * N);
    uint64_t s = 12345;
    auto rnd = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return (float)((s >> 40) & 0xffff) / 65536.0f - 0.5f; };
    for (auto& x : ha) x = __float2bfloat16(rnd());
    for (auto& x : hb) x = __float2bfloat16(rnd());
    __nv_bfloat16 *da, *db;
    float *dc, *dr;
    CK(cudaMalloc(&da, M * K * 2)); CK(cudaMalloc(&db, K * N * 2));
    CK(cudaMalloc(&dc, M * N * 4)); CK(cudaMalloc(&dr, M * N * 4));
    CK(cudaMemcpy(da, ha.data(), M * K * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), K * N * 2, cudaMemcpyHostToDevice));
    tsl_tensor_map tm0, tm1;
    CUtensorMap m0 = make_map(da, M, K, K, 128, 64), m1 = make_map(db, K, N, N, 64, 64);
    memcpy(&tm0, &m0, sizeof m0); memcpy(&tm1, &m1, sizeof m1);
    const int64_t ty = (M + 127) / 128, tx = (N + 255) / 256;
    dim3 grid(tx, ty + (ty & 1));  // the cluster kernel needs whole pairs along M
    const float one = 1, zero = 0;
    auto cublas = [&] { cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, db, CUDA_R_16BF, N, da, CUDA_R_16BF, K, &zero, dr, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
    auto launch = [&](int v) {
      fns[v]<<<v == 0 ? dim3(tx, ty) : grid, 384, smem>>>(M, N, K, K, N, N, 1.0, 0.0, (const unsigned short*)da, (const unsigned short*)db, dc, tm0, tm1);
    };
    std::vector<float> ref(M * N), out(M * N);
    cublas(); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ref.data(), dr, M * N * 4, cudaMemcpyDeviceToHost));
    auto diff = [&] {
      CK(cudaMemcpy(out.data(), dc, M * N * 4, cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      for (int64_t i = 0; i < M * N; ++i) { double d = out[i] - ref[i]; num += d * d; den += (double)ref[i] * ref[i]; }
      return std::sqrt(num / den);
    };
    double d[8];
    for (int v = 0; v < nk; ++v) {
      CK(cudaMemset(dc, 0xff, M * N * 4)); launch(v); CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); d[v] = diff();
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    auto time = [&](auto f) {
      cudaEventRecord(e0);
      for (int i = 0; i < 20; ++i) f();
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      return ms * 1000 / 20;
    };
    std::vector<std::vector<double>> t(nk + 1);
    for (int r = 0; r < 11; ++r) {
      t[nk].push_back(time(cublas));
      for (int v = 0; v < nk; ++v) t[v].push_back(time([&] { launch(v); }));
    }
    auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    const double b = med(t[nk]);
    printf("%-16s %10.2f", argv[a], b);
    for (int v = 0; v < nk; ++v) printf(" %9.2f %5.3f %5.1g", med(t[v]), b / med(t[v]), d[v]);
    printf("\n");
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dr);
  }
}
