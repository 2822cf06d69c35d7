# Writes k.h: the built-in avx512 6x64 kernel (k_base, cut from
# src/target/cpu/cpu_microkernel_prebuilt.inc into k6x64.inc) and a copy that
# prefetches A's six rows PFD floats ahead every 16 k steps (k_pf).
src = open('k6x64.inc').read()
hdr = '''typedef long int64_t;
typedef float tsl_vf __attribute__((vector_size(64)));
typedef float tsl_vfu __attribute__((vector_size(64), aligned(4)));
'''
base = src.replace('tsl_ukr_6x64_s_s', 'k_base')
loop = '''#pragma GCC unroll 4
    for (; k < kc; ++k, ++ap0, ++ap1, bk += ldb) {'''
i = base.index(loop)
j = base.index('    __asm__("" : "+r"(c), "+r"(ldc));')
body = base[i + len(loop):j]
pf = '''    while (k < kc) {
      const int64_t kend = k + 16 < kc ? k + 16 : kc;
      __builtin_prefetch(ap0 + PFD, 0, 3);
      __builtin_prefetch(ap0 + lda + PFD, 0, 3);
      __builtin_prefetch(ap0 + 2 * lda + PFD, 0, 3);
      __builtin_prefetch(ap0 + lda3 + PFD, 0, 3);
      __builtin_prefetch(ap1 + PFD, 0, 3);
      __builtin_prefetch(ap1 + lda + PFD, 0, 3);
#pragma GCC unroll 4
    for (; k < kend; ++k, ++ap0, ++ap1, bk += ldb) {''' + body + '''    }
'''
open('k.h', 'w').write(hdr + base + '\n' + base[:i].replace('k_base', 'k_pf') + pf + base[j:])
