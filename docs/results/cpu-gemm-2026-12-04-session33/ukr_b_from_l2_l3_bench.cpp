// The 12x32 micro-kernel with embedded broadcasts over PANELS 256x32 B panels (thirty-third
// session): 16 panels (512 KiB) stay in L2, 64 and more come from L3; variants prefetch
// B 0, 8, 16 or 32 k steps ahead. Run:
//   g++ -O2 -march=x86-64-v4 -mprefer-vector-width=512 ukr_b_from_l2_l3_bench.cpp -o l2 && ./l2 PANELS

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <cstdlib>
typedef float vf __attribute__((vector_size(64)));
typedef float vfu __attribute__((vector_size(64), aligned(4)));
__attribute__((noinline)) void k0(int64_t kc,const float* a,const float* b,float* c,int64_t lda,int64_t ldc){
vf c00={}, c01={};
vf c10={}, c11={};
vf c20={}, c21={};
vf c30={}, c31={};
vf c40={}, c41={};
vf c50={}, c51={};
vf c60={}, c61={};
vf c70={}, c71={};
vf c80={}, c81={};
vf c90={}, c91={};
vf c100={}, c101={};
vf c110={}, c111={};
for(int64_t k=0;k<kc;++k){ vf b0=*(const vfu*)(b+k*32), b1=*(const vfu*)(b+k*32+16);
{const float* p=a+0*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c00):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c01):"v"(b1),"m"(*p));}
{const float* p=a+1*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c10):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c11):"v"(b1),"m"(*p));}
{const float* p=a+2*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c20):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c21):"v"(b1),"m"(*p));}
{const float* p=a+3*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c30):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c31):"v"(b1),"m"(*p));}
{const float* p=a+4*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c40):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c41):"v"(b1),"m"(*p));}
{const float* p=a+5*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c50):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c51):"v"(b1),"m"(*p));}
{const float* p=a+6*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c60):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c61):"v"(b1),"m"(*p));}
{const float* p=a+7*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c70):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c71):"v"(b1),"m"(*p));}
{const float* p=a+8*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c80):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c81):"v"(b1),"m"(*p));}
{const float* p=a+9*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c90):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c91):"v"(b1),"m"(*p));}
{const float* p=a+10*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c100):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c101):"v"(b1),"m"(*p));}
{const float* p=a+11*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c110):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c111):"v"(b1),"m"(*p));}
}
*(vfu*)(c+0*ldc)+=c00; *(vfu*)(c+0*ldc+16)+=c01;
*(vfu*)(c+1*ldc)+=c10; *(vfu*)(c+1*ldc+16)+=c11;
*(vfu*)(c+2*ldc)+=c20; *(vfu*)(c+2*ldc+16)+=c21;
*(vfu*)(c+3*ldc)+=c30; *(vfu*)(c+3*ldc+16)+=c31;
*(vfu*)(c+4*ldc)+=c40; *(vfu*)(c+4*ldc+16)+=c41;
*(vfu*)(c+5*ldc)+=c50; *(vfu*)(c+5*ldc+16)+=c51;
*(vfu*)(c+6*ldc)+=c60; *(vfu*)(c+6*ldc+16)+=c61;
*(vfu*)(c+7*ldc)+=c70; *(vfu*)(c+7*ldc+16)+=c71;
*(vfu*)(c+8*ldc)+=c80; *(vfu*)(c+8*ldc+16)+=c81;
*(vfu*)(c+9*ldc)+=c90; *(vfu*)(c+9*ldc+16)+=c91;
*(vfu*)(c+10*ldc)+=c100; *(vfu*)(c+10*ldc+16)+=c101;
*(vfu*)(c+11*ldc)+=c110; *(vfu*)(c+11*ldc+16)+=c111;
}
__attribute__((noinline)) void k8(int64_t kc,const float* a,const float* b,float* c,int64_t lda,int64_t ldc){
vf c00={}, c01={};
vf c10={}, c11={};
vf c20={}, c21={};
vf c30={}, c31={};
vf c40={}, c41={};
vf c50={}, c51={};
vf c60={}, c61={};
vf c70={}, c71={};
vf c80={}, c81={};
vf c90={}, c91={};
vf c100={}, c101={};
vf c110={}, c111={};
for(int64_t k=0;k<kc;++k){ vf b0=*(const vfu*)(b+k*32), b1=*(const vfu*)(b+k*32+16);
__builtin_prefetch(b+(k+8)*32); __builtin_prefetch(b+(k+8)*32+16);
{const float* p=a+0*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c00):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c01):"v"(b1),"m"(*p));}
{const float* p=a+1*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c10):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c11):"v"(b1),"m"(*p));}
{const float* p=a+2*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c20):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c21):"v"(b1),"m"(*p));}
{const float* p=a+3*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c30):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c31):"v"(b1),"m"(*p));}
{const float* p=a+4*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c40):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c41):"v"(b1),"m"(*p));}
{const float* p=a+5*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c50):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c51):"v"(b1),"m"(*p));}
{const float* p=a+6*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c60):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c61):"v"(b1),"m"(*p));}
{const float* p=a+7*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c70):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c71):"v"(b1),"m"(*p));}
{const float* p=a+8*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c80):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c81):"v"(b1),"m"(*p));}
{const float* p=a+9*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c90):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c91):"v"(b1),"m"(*p));}
{const float* p=a+10*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c100):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c101):"v"(b1),"m"(*p));}
{const float* p=a+11*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c110):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c111):"v"(b1),"m"(*p));}
}
*(vfu*)(c+0*ldc)+=c00; *(vfu*)(c+0*ldc+16)+=c01;
*(vfu*)(c+1*ldc)+=c10; *(vfu*)(c+1*ldc+16)+=c11;
*(vfu*)(c+2*ldc)+=c20; *(vfu*)(c+2*ldc+16)+=c21;
*(vfu*)(c+3*ldc)+=c30; *(vfu*)(c+3*ldc+16)+=c31;
*(vfu*)(c+4*ldc)+=c40; *(vfu*)(c+4*ldc+16)+=c41;
*(vfu*)(c+5*ldc)+=c50; *(vfu*)(c+5*ldc+16)+=c51;
*(vfu*)(c+6*ldc)+=c60; *(vfu*)(c+6*ldc+16)+=c61;
*(vfu*)(c+7*ldc)+=c70; *(vfu*)(c+7*ldc+16)+=c71;
*(vfu*)(c+8*ldc)+=c80; *(vfu*)(c+8*ldc+16)+=c81;
*(vfu*)(c+9*ldc)+=c90; *(vfu*)(c+9*ldc+16)+=c91;
*(vfu*)(c+10*ldc)+=c100; *(vfu*)(c+10*ldc+16)+=c101;
*(vfu*)(c+11*ldc)+=c110; *(vfu*)(c+11*ldc+16)+=c111;
}
__attribute__((noinline)) void k16(int64_t kc,const float* a,const float* b,float* c,int64_t lda,int64_t ldc){
vf c00={}, c01={};
vf c10={}, c11={};
vf c20={}, c21={};
vf c30={}, c31={};
vf c40={}, c41={};
vf c50={}, c51={};
vf c60={}, c61={};
vf c70={}, c71={};
vf c80={}, c81={};
vf c90={}, c91={};
vf c100={}, c101={};
vf c110={}, c111={};
for(int64_t k=0;k<kc;++k){ vf b0=*(const vfu*)(b+k*32), b1=*(const vfu*)(b+k*32+16);
__builtin_prefetch(b+(k+16)*32); __builtin_prefetch(b+(k+16)*32+16);
{const float* p=a+0*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c00):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c01):"v"(b1),"m"(*p));}
{const float* p=a+1*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c10):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c11):"v"(b1),"m"(*p));}
{const float* p=a+2*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c20):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c21):"v"(b1),"m"(*p));}
{const float* p=a+3*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c30):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c31):"v"(b1),"m"(*p));}
{const float* p=a+4*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c40):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c41):"v"(b1),"m"(*p));}
{const float* p=a+5*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c50):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c51):"v"(b1),"m"(*p));}
{const float* p=a+6*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c60):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c61):"v"(b1),"m"(*p));}
{const float* p=a+7*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c70):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c71):"v"(b1),"m"(*p));}
{const float* p=a+8*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c80):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c81):"v"(b1),"m"(*p));}
{const float* p=a+9*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c90):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c91):"v"(b1),"m"(*p));}
{const float* p=a+10*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c100):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c101):"v"(b1),"m"(*p));}
{const float* p=a+11*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c110):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c111):"v"(b1),"m"(*p));}
}
*(vfu*)(c+0*ldc)+=c00; *(vfu*)(c+0*ldc+16)+=c01;
*(vfu*)(c+1*ldc)+=c10; *(vfu*)(c+1*ldc+16)+=c11;
*(vfu*)(c+2*ldc)+=c20; *(vfu*)(c+2*ldc+16)+=c21;
*(vfu*)(c+3*ldc)+=c30; *(vfu*)(c+3*ldc+16)+=c31;
*(vfu*)(c+4*ldc)+=c40; *(vfu*)(c+4*ldc+16)+=c41;
*(vfu*)(c+5*ldc)+=c50; *(vfu*)(c+5*ldc+16)+=c51;
*(vfu*)(c+6*ldc)+=c60; *(vfu*)(c+6*ldc+16)+=c61;
*(vfu*)(c+7*ldc)+=c70; *(vfu*)(c+7*ldc+16)+=c71;
*(vfu*)(c+8*ldc)+=c80; *(vfu*)(c+8*ldc+16)+=c81;
*(vfu*)(c+9*ldc)+=c90; *(vfu*)(c+9*ldc+16)+=c91;
*(vfu*)(c+10*ldc)+=c100; *(vfu*)(c+10*ldc+16)+=c101;
*(vfu*)(c+11*ldc)+=c110; *(vfu*)(c+11*ldc+16)+=c111;
}
__attribute__((noinline)) void k32(int64_t kc,const float* a,const float* b,float* c,int64_t lda,int64_t ldc){
vf c00={}, c01={};
vf c10={}, c11={};
vf c20={}, c21={};
vf c30={}, c31={};
vf c40={}, c41={};
vf c50={}, c51={};
vf c60={}, c61={};
vf c70={}, c71={};
vf c80={}, c81={};
vf c90={}, c91={};
vf c100={}, c101={};
vf c110={}, c111={};
for(int64_t k=0;k<kc;++k){ vf b0=*(const vfu*)(b+k*32), b1=*(const vfu*)(b+k*32+16);
__builtin_prefetch(b+(k+32)*32); __builtin_prefetch(b+(k+32)*32+16);
{const float* p=a+0*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c00):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c01):"v"(b1),"m"(*p));}
{const float* p=a+1*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c10):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c11):"v"(b1),"m"(*p));}
{const float* p=a+2*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c20):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c21):"v"(b1),"m"(*p));}
{const float* p=a+3*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c30):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c31):"v"(b1),"m"(*p));}
{const float* p=a+4*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c40):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c41):"v"(b1),"m"(*p));}
{const float* p=a+5*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c50):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c51):"v"(b1),"m"(*p));}
{const float* p=a+6*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c60):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c61):"v"(b1),"m"(*p));}
{const float* p=a+7*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c70):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c71):"v"(b1),"m"(*p));}
{const float* p=a+8*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c80):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c81):"v"(b1),"m"(*p));}
{const float* p=a+9*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c90):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c91):"v"(b1),"m"(*p));}
{const float* p=a+10*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c100):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c101):"v"(b1),"m"(*p));}
{const float* p=a+11*lda+k; asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c110):"v"(b0),"m"(*p)); asm("vfmadd231ps %2%{1to16%}, %1, %0":"+v"(c111):"v"(b1),"m"(*p));}
}
*(vfu*)(c+0*ldc)+=c00; *(vfu*)(c+0*ldc+16)+=c01;
*(vfu*)(c+1*ldc)+=c10; *(vfu*)(c+1*ldc+16)+=c11;
*(vfu*)(c+2*ldc)+=c20; *(vfu*)(c+2*ldc+16)+=c21;
*(vfu*)(c+3*ldc)+=c30; *(vfu*)(c+3*ldc+16)+=c31;
*(vfu*)(c+4*ldc)+=c40; *(vfu*)(c+4*ldc+16)+=c41;
*(vfu*)(c+5*ldc)+=c50; *(vfu*)(c+5*ldc+16)+=c51;
*(vfu*)(c+6*ldc)+=c60; *(vfu*)(c+6*ldc+16)+=c61;
*(vfu*)(c+7*ldc)+=c70; *(vfu*)(c+7*ldc+16)+=c71;
*(vfu*)(c+8*ldc)+=c80; *(vfu*)(c+8*ldc+16)+=c81;
*(vfu*)(c+9*ldc)+=c90; *(vfu*)(c+9*ldc+16)+=c91;
*(vfu*)(c+10*ldc)+=c100; *(vfu*)(c+10*ldc+16)+=c101;
*(vfu*)(c+11*ldc)+=c110; *(vfu*)(c+11*ldc+16)+=c111;
}

int main(int argc, char** argv) {
  const int KC = 256, PANELS = argc > 1 ? atoi(argv[1]) : 16, ROWS = 24;
  std::vector<float> a(ROWS * KC, 0.01f), b(PANELS * KC * 32, 0.02f), c(ROWS * PANELS * 32, 0.f);
  for (int v = 0; v < 4; ++v) {
    double best = 1e9;
    for (int rep = 0; rep < 30; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < 20; ++it)
        for (int p = 0; p < PANELS; ++p)
          for (int r = 0; r < ROWS; r += 12) {
            auto f = v == 0 ? k0 : v == 1 ? k8 : v == 2 ? k16 : k32;
            f(KC, a.data() + r * KC, b.data() + p * KC * 32, c.data() + r * PANELS * 32 + p * 32, KC, PANELS * 32);
          }
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20;
      if (t < best) best = t;
    }
    printf("pf %d: %.1f GFLOP/s\n", v == 0 ? 0 : v == 1 ? 8 : v == 2 ? 16 : 32, 2.0 * ROWS * PANELS * 32 * KC / best / 1e9);
  }
}
