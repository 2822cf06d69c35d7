// Emitted by tessel (cuda target).
typedef long long int64_t;
#define INT64_C(c) c##LL
static __device__ __forceinline__ int64_t tsl_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static __device__ __forceinline__ int64_t tsl_ceildiv(int64_t a, int64_t b) { return -tsl_floordiv(-a, b); }
static __device__ __forceinline__ int64_t tsl_mod(int64_t a, int64_t b) { return a - b * tsl_floordiv(a, b); }
static __device__ __forceinline__ int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }
static __device__ __forceinline__ int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }
static __device__ __forceinline__ unsigned tsl_smem(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (unsigned)a;
}
// 16 bytes global -> shared, asynchronously; bytes past src_bytes are zero-filled.
// Shared addresses are 32-bit offsets in the shared window (tsl_smem of the base
// once, then plain adds): formed from generic pointers, every address cost a
// 64-bit add and a conversion.
static __device__ __forceinline__ void tsl_cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(src_bytes));
}
// 8 and 4 bytes, for rows off 16 bytes (cp.async.cg takes 16 only).
static __device__ __forceinline__ void tsl_cp_async8(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(dst), "l"(src), "r"(src_bytes));
}
static __device__ __forceinline__ void tsl_cp_async4(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(src), "r"(src_bytes));
}
// max and min that keep a NaN operand (as the sim does), so poison stays visible:
// one instruction from sm_80 on.
static __device__ __forceinline__ float tsl_max(float x, float y) {
#if __CUDA_ARCH__ >= 800
  float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y)); return r;
#else
  return (x != x || x > y) ? x : y;
#endif
}
static __device__ __forceinline__ float tsl_min(float x, float y) {
#if __CUDA_ARCH__ >= 800
  float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y)); return r;
#else
  return (x != x || x < y) ? x : y;
#endif
}
// 2^x in one instruction (ex2.approx, relative error about 2^-22): results below
// 2^-126 flush to zero. exp2f adds a range check and two multiplies around the same
// instruction to return those subnormals; a loop of exponentials pays that per element.
static __device__ __forceinline__ float tsl_exp2(float x) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r;
}
static __device__ __forceinline__ float tsl_bf16_to_f32(unsigned short x) { return __uint_as_float((unsigned)x << 16); }
static __device__ __forceinline__ float tsl_f16_to_f32(unsigned short x) {
  float f; asm("{ .reg .b16 h; mov.b16 h, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "h"(x)); return f;
}
static __device__ __forceinline__ unsigned short tsl_f32_to_bf16(float f) {
  unsigned short x; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(x) : "f"(f)); return x;
}
static __device__ __forceinline__ unsigned short tsl_f32_to_f16(float f) {
  unsigned short x; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f)); return x;
}
static __device__ __forceinline__ unsigned tsl_tf32(float f) {
  unsigned x; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(x) : "f"(f)); return x;
}
static __device__ __forceinline__ unsigned tsl_pack16(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}
// Two floats rounded to 16 bits and packed in one instruction (the first source
// operand goes to the upper half).
static __device__ __forceinline__ unsigned tsl_pack_bf16x2(float lo, float hi) {
  unsigned x; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(x) : "f"(hi), "f"(lo)); return x;
}
static __device__ __forceinline__ unsigned tsl_pack_f16x2(float lo, float hi) {
  unsigned x; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(x) : "f"(hi), "f"(lo)); return x;
}
static __device__ __forceinline__ void tsl_ldmatrix_x4(unsigned* r, unsigned p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(p));
}
static __device__ __forceinline__ void tsl_ldmatrix_x4_trans(unsigned* r, unsigned p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(p));
}
static __device__ __forceinline__ void tsl_mma_bf16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
static __device__ __forceinline__ void tsl_mma_f16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// wgmma shared-memory matrix descriptor, 128-byte swizzle: start address, leading
// and stride byte offsets, each in 16-byte units (PTX ISA, "Matrix Descriptor").
static __device__ __forceinline__ unsigned long long tsl_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
static __device__ __forceinline__ void tsl_mma_tf32(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
struct __align__(64) tsl_tensor_map { unsigned long long opaque[16]; };
static __device__ __forceinline__ void tsl_mbar_init(unsigned a, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(a), "r"(count) : "memory");
}
static __device__ __forceinline__ void tsl_mbar_arrive(unsigned a) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" :: "r"(a) : "memory");
}
static __device__ __forceinline__ void tsl_mbar_expect_tx(unsigned a, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" :: "r"(a), "r"(bytes) : "memory");
}
// Returns once the phase of parity `parity` has completed (acquire, CTA scope).
static __device__ __forceinline__ void tsl_mbar_wait(unsigned a, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(a), "r"(parity) : "memory");
  } while (!done);
}
// One box of a 2-D tensor map at (c0 = column, c1 = row) into shared memory at dst,
// completing its bytes on the mbarrier at mbar.
static __device__ __forceinline__ void tsl_tma_2d(unsigned dst, const tsl_tensor_map* map, int c0, int c1, unsigned mbar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(mbar) : "memory");
}
static __device__ __forceinline__ void tsl_wgmma_bf16_n256(float* d, unsigned long long a, unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
    : "l"(a), "l"(b), "r"(1) : "memory");
}

extern "C" __global__ void __launch_bounds__(384, 1) tessel_kernel(int64_t v_M, int64_t v_N, int64_t v_K, int64_t v_lda, int64_t v_ldb, int64_t v_ldc, double d_alpha, double d_beta, const unsigned short* __restrict__ t0, const unsigned short* __restrict__ t1, float* __restrict__ t2, const __grid_constant__ tsl_tensor_map tm0, const __grid_constant__ tsl_tensor_map tm1) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* const smem = smem_raw + ((1024 - (tsl_smem(smem_raw) & 1023)) & 1023);
  const unsigned smem_s = tsl_smem(smem); (void)smem_s;
  const int tid = threadIdx.x, worker = tid / 128, lane = tid % 128;
  (void)worker; (void)lane;
  const int wr = worker / 1, wc = worker % 1;
  const bool owns = worker < 2;
  (void)wr; (void)wc; (void)owns;
  const float s_alpha = (float)d_alpha; (void)s_alpha;
  const float s_beta = (float)d_beta; (void)s_beta;
  const int64_t v_i0 = blockIdx.y;
  const int64_t v_j1 = blockIdx.x;
  const int64_t tsl_u0 = tsl_ceildiv(v_K, INT64_C(64));
  const int64_t tsl_u1 = tsl_mod((tsl_ceildiv(v_K, INT64_C(64)) - INT64_C(1)), INT64_C(4));
  float f3[128];  // f
  unsigned short* const b4 = (unsigned short*)(smem + 0);  // As
  unsigned short* const b5 = (unsigned short*)(smem + 65536);  // Bs
  float f6[128];  // f1
  const unsigned mb0 = tsl_smem(smem + 196608);  // mbarrier full[4]
  const unsigned mb1 = tsl_smem(smem + 196640);  // mbarrier empty[4]
  if (tid == 0) {  // mbar.init #29
    for (int s = 0; s < 4; ++s) tsl_mbar_init(mb0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (tid == 0) {  // mbar.init #30
    for (int s = 0; s < 4; ++s) tsl_mbar_init(mb1 + 8 * s, 8);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();  // fence #31
  if (worker >= 2 && worker < 3) {  // roles #32: workers 2 to 3
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid == 256) {
      for (int64_t v_k2 = INT64_C(0); v_k2 < tsl_u0; ++v_k2) {
        tsl_mbar_wait(mb1 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4))), (unsigned)(tsl_mod((tsl_floordiv(v_k2, INT64_C(4)) + INT64_C(1)), INT64_C(2))));  // mbar.wait #21
        if (tid == 256) tsl_mbar_expect_tx(mb0 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4))), 49152u);  // mbar.expect_tx #22
        // tma #23
        if (tid == 256) {
          const int r = (int)((v_i0 * INT64_C(128))), c = (int)((v_k2 * INT64_C(64)));
          const int dr = (int)(INT64_C(0)), dc = (int)(INT64_C(0));
          const unsigned bar = mb0 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4)));
          #pragma unroll
          for (int p = 0; p < 1; ++p) tsl_tma_2d(tsl_smem(&(b4 + (int)(tsl_mod(v_k2, INT64_C(4))) * 8192)[(int)(dr) * 64 + (((((int)(dc + p * 64)) >> 3) ^ ((int)(dr) & 7)) << 3) + (((int)(dc + p * 64)) & 7)]), &tm0, c + p * 64, r, bar);
        }
        // tma #24
        if (tid == 256) {
          const int r = (int)((v_k2 * INT64_C(64))), c = (int)((v_j1 * INT64_C(256)));
          const int dr = (int)(INT64_C(0)), dc = (int)(INT64_C(0));
          const unsigned bar = mb0 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4)));
          #pragma unroll
          for (int p = 0; p < 4; ++p) tsl_tma_2d(tsl_smem(&(b5 + (int)(tsl_mod(v_k2, INT64_C(4))) * 16384)[((int)(dc + p * 64) / 64) * 4096 + (int)(dr) * 64 + ((((((int)(dc + p * 64) % 64)) >> 3) ^ ((int)(dr) & 7)) << 3) + ((((int)(dc + p * 64) % 64)) & 7)]), &tm1, c + p * 64, r, bar);
        }
        if (tid == 256) tsl_mbar_arrive(mb0 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4))));  // mbar.arrive #25 leader
      }
    }
  } else if (worker >= 0 && worker < 2) {  // roles #32: workers 0 to 2
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    // frag.fill #0
    {
      #pragma unroll
      for (int i = 0; i < 128; i += 2) {
        const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
        (void)ri; (void)ci;
        f3[i + 0] = 0.0f;
        f3[i + 1] = 0.0f;
      }
    }
    for (int64_t v_k2 = INT64_C(0); v_k2 < tsl_u0; ++v_k2) {
      tsl_mbar_wait(mb0 + 8 * (unsigned)(tsl_mod(v_k2, INT64_C(4))), (unsigned)(tsl_mod(tsl_floordiv(v_k2, INT64_C(4)), INT64_C(2))));  // mbar.wait #16
      // mma #6 (128x256x64, wgmma)
      if (owns) {
        const int ar = (int)(INT64_C(0)) + wr * 64;
        const int bc = (int)(INT64_C(0)) + wc * 256;
        const int ak = (int)(INT64_C(0)), bk = (int)(INT64_C(0));
        const unsigned sa = tsl_smem(&(b4 + (int)(tsl_mod(v_k2, INT64_C(4))) * 8192)[(int)(ar) * 64 + (((((int)(0)) >> 3) ^ ((int)(ar) & 7)) << 3) + (((int)(0)) & 7)]) + ak * 2;
        const unsigned sb = tsl_smem(&(b5 + (int)(tsl_mod(v_k2, INT64_C(4))) * 16384)[((int)(bc) / 64) * 4096 + (int)(bk) * 64 + ((((((int)(bc) % 64)) >> 3) ^ ((int)(bk) & 7)) << 3) + ((((int)(bc) % 64)) & 7)]);
        const unsigned long long da0 = tsl_wgmma_desc(sa, 16, 1024);
        const unsigned long long db0 = tsl_wgmma_desc(sb, 8192, 1024);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const unsigned long long db = db0 + (unsigned long long)(kk * 2048 / 16);
          #pragma unroll
          for (int m = 0; m < 1; ++m) tsl_wgmma_bf16_n256(&f3[m * 128], da0 + (unsigned long long)((m * 8192 + kk * 32) / 16), db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      }
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // #17
      #pragma unroll
      for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(f3[i]) :: "memory");
      if (v_k2 > INT64_C(0)) {
        // mbar.arrive #18
        {
          __syncwarp();
          if (lane % 32 == 0) tsl_mbar_arrive(mb1 + 8 * (unsigned)(tsl_mod((v_k2 - INT64_C(1)), INT64_C(4))));
        }
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // #26
    #pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(f3[i]) :: "memory");
    if (tsl_u0 > INT64_C(0)) {
      // mbar.arrive #27
      {
        __syncwarp();
        if (lane % 32 == 0) tsl_mbar_arrive(mb1 + 8 * (unsigned)(tsl_u1));
      }
    }
    // ew #9
    {
      #pragma unroll
      for (int i = 0; i < 128; i += 2) {
        const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
        (void)ri; (void)ci;
        f3[i + 0] = f3[i + 0] * s_alpha;
        f3[i + 1] = f3[i + 1] * s_alpha;
      }
    }
    if (d_beta == 0) {
      // frag.store #11
      if (owns) {
        const int64_t r0_11 = (v_i0 * INT64_C(128)) + (int64_t)wr * 64, c0_11 = (v_j1 * INT64_C(256)) + (int64_t)wc * 256;
        if (r0_11 + 64 <= v_M && c0_11 + 256 <= v_N && ((unsigned long long)t2) % 16 == 0 && (v_ldc) % 4 == 0 && (c0_11) % 4 == 0) {
          float* const stg = (float*)(smem + 196672) + worker * 2560;
          float* const stw = stg + ((lane / 32) * 16 + (lane % 32) / 4) * 40 + (lane % 4) * 2;
          const float* const str = stg + (lane / 8) * 40 + (lane % 8) * 4;
          float* const gp = &t2[(int64_t)(r0_11 + lane / 8) * (v_ldc) + (c0_11 + (lane % 8) * 4)];
          const int64_t gstep = (int64_t)16 * (v_ldc);
          #pragma unroll
          for (int j = 0; j < 16; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 0) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 0) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 16; j < 32; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 32) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 32) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 32; j < 48; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 64) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 64) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 48; j < 64; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 96) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 96) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 64; j < 80; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 128) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 128) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 80; j < 96; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 160) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 160) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 96; j < 112; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 192) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 192) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int j = 112; j < 128; j += 2) {
            *(float2*)(stw + (j / 2 % 2) * 320 + (j / 4) * 8 - 224) = make_float2(f3[0 + j], f3[0 + j + 1]);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
          #pragma unroll
          for (int v = 0; v < 4; ++v) {
            *(float4*)(gp + v * gstep + 224) = *(const float4*)(str + v * 640);
          }
          asm volatile("bar.sync %0, 128;\n" :: "r"(1 + worker) : "memory");
        } else {
          if (r0_11 + 64 <= v_M && c0_11 + 256 <= v_N && ((unsigned long long)t2) % 8 == 0 && (v_ldc) % 2 == 0 && (c0_11) % 2 == 0) {
            #pragma unroll
            for (int i = 0; i < 128; i += 2) {
              const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
              (void)ri; (void)ci;
              *(float2*)&t2[(int64_t)(r0_11 + ri) * (v_ldc) + (c0_11 + ci)] = make_float2(f3[i + 0], f3[i + 1]);
            }
          } else {
            #pragma unroll
            for (int i = 0; i < 128; i += 1) {
              const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
              (void)ri; (void)ci;
              if ((r0_11 + ri) < v_M && (c0_11 + ci) < v_N) t2[(int64_t)(r0_11 + ri) * (v_ldc) + (c0_11 + ci)] = f3[i];
            }
          }
        }
      }
    } else {
      // frag.load #12, ew #13, ew #14, frag.store #15
      if (owns) {
        const int64_t r0_12 = (v_i0 * INT64_C(128)) + (int64_t)wr * 64, c0_12 = (v_j1 * INT64_C(256)) + (int64_t)wc * 256;
        const int64_t r0_15 = (v_i0 * INT64_C(128)) + (int64_t)wr * 64, c0_15 = (v_j1 * INT64_C(256)) + (int64_t)wc * 256;
        if (r0_12 + 64 <= v_M && c0_12 + 256 <= v_N && r0_15 + 64 <= v_M && c0_15 + 256 <= v_N && ((unsigned long long)t2) % 8 == 0 && (v_ldc) % 2 == 0 && (c0_12) % 2 == 0 && ((unsigned long long)t2) % 8 == 0 && (v_ldc) % 2 == 0 && (c0_15) % 2 == 0) {
          #pragma unroll
          for (int i = 0; i < 128; i += 2) {
            const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
            (void)ri; (void)ci;
            { const float2 v = *(const float2*)&t2[(int64_t)(r0_12 + ri) * (v_ldc) + (c0_12 + ci)];
              f6[i + 0] = v.x;
              f6[i + 1] = v.y;
            }
            f6[i + 0] = f6[i + 0] * s_beta;
            f6[i + 1] = f6[i + 1] * s_beta;
            f6[i + 0] = f3[i + 0] + f6[i + 0];
            f6[i + 1] = f3[i + 1] + f6[i + 1];
            *(float2*)&t2[(int64_t)(r0_15 + ri) * (v_ldc) + (c0_15 + ci)] = make_float2(f6[i + 0], f6[i + 1]);
          }
        } else {
          #pragma unroll
          for (int i = 0; i < 128; i += 1) {
            const int64_t ri = (((i) / 128) * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (((i) % 128) / 2 % 2) * 8), ci = ((((i) % 128) / 4) * 8 + (lane % 4) * 2 + ((i) % 128) % 2);
            (void)ri; (void)ci;
            f6[i] = ((r0_12 + ri) < v_M && (c0_12 + ci) < v_N) ? t2[(int64_t)(r0_12 + ri) * (v_ldc) + (c0_12 + ci)] : 0.0f;
            f6[i + 0] = f6[i + 0] * s_beta;
            f6[i + 0] = f3[i + 0] + f6[i + 0];
            if ((r0_15 + ri) < v_M && (c0_15 + ci) < v_N) t2[(int64_t)(r0_15 + ri) * (v_ldc) + (c0_15 + ci)] = f6[i];
          }
        }
      }
    }
  }
}
