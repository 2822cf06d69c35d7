// How fast can split-K's sum of S fp32 partial planes (M x N, in L2 after a writer
// kernel) into C run on this GPU? Variants of the sum, each timed after a writer
// kernel that stores the partials as split-K's slices would, so the sum's in-situ cost
// is (writer + sum) - writer.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void writer(float* P, long planes, long total, int spin) {
  // one block a 128x128 tile of one slice: long-ish compute, then the stores
  long t0 = clock64(); while (clock64() - t0 < spin) {}
  long per = total / gridDim.x;
  float4* p = (float4*)(P + per * blockIdx.x);
  for (long i = threadIdx.x; i < per / 4; i += blockDim.x) p[i] = make_float4(1.f, 2.f, 3.f, float(i));
}
// ours-like: tile 2 x 1024, 256 threads, 8 consecutive columns a thread
__global__ void sum_tile(const float* P, float* C, int S, long sps, int N, float alpha) {
  int r = blockIdx.x * 2 + threadIdx.x / 128, c = (threadIdx.x % 128) * 8;
  float4 a = make_float4(0, 0, 0, 0), b = a;
  for (int s = 0; s < S; ++s) {
    const float4* p = (const float4*)(P + s * sps + long(r) * N + c);
    float4 x = p[0], y = p[1];
    a.x += x.x; a.y += x.y; a.z += x.z; a.w += x.w; b.x += y.x; b.y += y.y; b.z += y.z; b.w += y.w;
  }
  float4* o = (float4*)(C + long(r) * N + c);
  o[0] = make_float4(a.x * alpha, a.y * alpha, a.z * alpha, a.w * alpha);
  o[1] = make_float4(b.x * alpha, b.y * alpha, b.z * alpha, b.w * alpha);
}
// V vectors a thread, blocks of T threads, all S loads issued before any add
template <int V, int SMAX>
__global__ void sum_vec(const float* P, float* C, int S, long sps, long total4, float alpha) {
  long base = (long(blockIdx.x) * blockDim.x * V) + threadIdx.x;
  float4 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int s = 0; s < SMAX; ++s) {
    if (s >= S) break;
    float4 x[V];
#pragma unroll
    for (int v = 0; v < V; ++v) { long i = base + long(v) * blockDim.x; x[v] = i < total4 ? ((const float4*)(P + s * sps))[i] : make_float4(0, 0, 0, 0); }
#pragma unroll
    for (int v = 0; v < V; ++v) { acc[v].x += x[v].x; acc[v].y += x[v].y; acc[v].z += x[v].z; acc[v].w += x[v].w; }
  }
#pragma unroll
  for (int v = 0; v < V; ++v) { long i = base + long(v) * blockDim.x; if (i < total4) ((float4*)C)[i] = make_float4(acc[v].x * alpha, acc[v].y * alpha, acc[v].z * alpha, acc[v].w * alpha); }
}

int main() {
  int reps = getenv("REPS") ? atoi(getenv("REPS")) : 30;
  int shapes[][3] = {{1024, 1024, 2}, {1024, 1024, 4}, {1536, 1024, 2}, {1536, 1024, 4}, {512, 512, 8}, {16, 4096, 8}};
  float *P, *C; CK(cudaMalloc(&P, 64l << 20)); CK(cudaMalloc(&C, 16l << 20));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  printf("%-16s %-22s %9s %9s %9s\n", "MxN S", "variant", "pair us", "alone us", "in situ");
  for (auto& sh : shapes) {
    int M = sh[0], N = sh[1], S = sh[2]; long sps = long(M) * N, total4 = sps / 4;
    int spin = 40000;  // ~20 us at 1.98 GHz
    for (int var = 0; var < 6; ++var) {
      const char* name[] = {"writer only", "tile 2x1024/256", "1 vec x 256", "4 vec x 256", "2 vec x 512", "8 vec x 128"};
      auto sum = [&] {
        switch (var) {
          case 1: sum_tile<<<M / 2, 256>>>(P, C, S, sps, N, 1.5f); break;
          case 2: sum_vec<1, 8><<<(total4 + 255) / 256, 256>>>(P, C, S, sps, total4, 1.5f); break;
          case 3: sum_vec<4, 8><<<(total4 + 1023) / 1024, 256>>>(P, C, S, sps, total4, 1.5f); break;
          case 4: sum_vec<2, 8><<<(total4 + 1023) / 1024, 512>>>(P, C, S, sps, total4, 1.5f); break;
          case 5: sum_vec<8, 8><<<(total4 + 1023) / 1024, 128>>>(P, C, S, sps, total4, 1.5f); break;
        }
      };
      float best_pair = 1e9, best_alone = 1e9;
      for (int rep = 0; rep < reps; ++rep) {
        cudaEventRecord(e0); writer<<<128, 384>>>(P, S, S * sps, spin); sum(); cudaEventRecord(e1);
        cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best_pair) best_pair = ms;
        cudaEventRecord(e0); sum(); cudaEventRecord(e1);
        cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1); if (ms < best_alone) best_alone = ms;
      }
      CK(cudaGetLastError());
      static float writer_only;
      if (var == 0) writer_only = best_pair;
      char lab[32]; snprintf(lab, 32, "%dx%d S=%d", M, N, S);
      printf("%-16s %-22s %9.2f %9.2f %9.2f\n", lab, name[var], best_pair * 1e3, var ? best_alone * 1e3 : 0.0, var ? (best_pair - writer_only) * 1e3 : 0.0);
    }
  }
  return 0;
}
