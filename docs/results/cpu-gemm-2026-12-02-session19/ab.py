# Times two versions of tessel's built-in micro-kernels in one process, alternating,
# on the same block calls: the old kernels from a file given on the command line
# (e.g. `git show HEAD~1:src/target/cpu/cpu_microkernel_prebuilt.inc > old.inc`), the
# new ones from the tree. Prints the best of 40 batches of each and new / old.
#   python3 ab.py OLD.inc avx512|avx2 M N K "[(MR, NR, ROW_BLOCKS, COL_BLOCKS), ...]"
#   g++ -O3 -std=c++20 ab.cpp -o ab && ./ab
# The blocks run down the rows, each row block over COL_BLOCKS column blocks of NR
# (the calls tessel's unit makes for that shape: see its cached .cpp).
import sys

old_inc, isa = sys.argv[1], sys.argv[2]
M, N, K = map(int, sys.argv[3:6])
blocks = eval(sys.argv[6])
new_inc = 'src/target/cpu/cpu_microkernel_prebuilt.inc'
width, arch = (64, 'x86-64-v4,prefer-vector-width=512') if isa == 'avx512' else (32, 'x86-64-v3')


def kernels(path, names):
    src = open(path).read()
    part = src[src.index('namespace tessel_prebuilt_' + isa):]
    out = ''
    for name in names:
        i = part.rindex('__attribute__', 0, part.index('static void ' + name + '('))
        j = part.index('\n}\n', i) + 3
        # noipa: no constant of the call sites propagates into the kernel (as in tessel)
        out += part[i:j].replace('__attribute__((noinline))', '__attribute__((noinline, noipa))')
    return out


names = sorted({'tsl_ukr_%dx%d_s_s' % (mr, nr) for mr, nr, _, _ in blocks})
types = ('typedef long int64_t;\ntypedef float tsl_vf __attribute__((vector_size(%d)));\n'
         'typedef float tsl_vfu __attribute__((vector_size(%d), aligned(4)));\n' % (width, width))
out = '#pragma GCC push_options\n#pragma GCC target("arch=%s")\n#pragma GCC optimize("fp-contract=fast")\n' % arch
calls = {}
for ns, path in [('vold', old_inc), ('vnew', new_inc)]:
    out += 'namespace ' + ns + ' {\n' + types + kernels(path, names) + '}\n'
    c, r0 = '', 0
    for mr, nr, rb, cb in blocks:
        c += (f'for (long i = {r0}; i < {r0 + rb * mr}; i += {mr}) for (long j = 0; j < {cb * nr}; j += {nr}) '
              f'{ns}::tsl_ukr_{mr}x{nr}_s_s(K, a + i * K, b + j, c + i * N + j, N, K, N, 1); ')
        r0 += rb * mr
    calls[ns] = c
out += '#pragma GCC pop_options\n'
out += f'''#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
int main() {{
  volatile long MM = {M}, NN = {N}, KK = {K};
  const long M = MM, N = NN, K = KK;
  float* a = (float*)aligned_alloc(64, (4 * M * K + 127) / 64 * 64);
  float* b = (float*)aligned_alloc(64, (4 * K * N + 127) / 64 * 64);
  float* c = (float*)aligned_alloc(64, (4 * M * N + 127) / 64 * 64);
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (long i = 0; i < M * K; ++i) a[i] = d(g);
  for (long i = 0; i < K * N; ++i) b[i] = d(g);
  auto f_old = [&] {{ {calls['vold']} }};
  auto f_new = [&] {{ {calls['vnew']} }};
  auto time = [&](auto f) {{
    const long calls = std::max(100L, 20000000L / (M * N * K));
    f();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {{ f(); asm volatile("" ::: "memory"); }}
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
  }};
  double t_old = 1e18, t_new = 1e18;
  for (int rep = 0; rep < 40; ++rep) {{ t_old = std::min(t_old, time(f_old)); t_new = std::min(t_new, time(f_new)); }}
  printf("{M}x{N}x{K}: old %.0f new %.0f ns, new/old %.3f (new %.0f GFLOP/s)\\n", t_old, t_new, t_new / t_old,
         2.0 * M * N * K / t_new);
}}
'''
open('ab.cpp', 'w').write(out)
