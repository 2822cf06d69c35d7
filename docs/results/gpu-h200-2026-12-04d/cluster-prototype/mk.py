# Makes kernels.cu from kernel_base.cu (tessel's emitted 128x256 bf16 kernel): the
# plain kernel and cluster variants named tessel_kernel_<v>.
import re
s = open('kernel_base.cu').read()
s = s.replace('typedef long long int64_t;\n', '').replace('#define INT64_C(c) c##LL\n', '')
s = '#include <stdint.h>\n#ifndef INT64_C\n#define INT64_C(c) c##LL\n#endif\n' + s

def variant(name, multicast, remote_sem, spread):
    c = s
    c = c.replace('extern "C" __global__ void __launch_bounds__(384, 1) tessel_kernel(',
                  'extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(384, 1) tessel_kernel_' + name + '(')
    c = c.replace('  const unsigned mb1 = tsl_smem(smem + 196640);  // mbarrier empty[4]\n',
                  '  const unsigned mb1 = tsl_smem(smem + 196640);  // mbarrier empty[4]\n'
                  '  const unsigned rank = blockIdx.y & 1, peer = rank ^ 1; (void)peer;\n', 1)
    c = c.replace('  __syncthreads();  // fence #31\n', '  __syncthreads();  // fence #31\n  tsl_cluster_sync();\n')
    if multicast:
        c = c.replace('tsl_mbar_init(mb1 + 8 * s, 8);', 'tsl_mbar_init(mb1 + 8 * s, 16);')
        old = 'for (int p = 0; p < 4; ++p) tsl_tma_2d(tsl_smem(&(b5'
        assert old in c
        c = c.replace(old, 'for (int p = 2 * (int)rank; p < 2 * (int)rank + 2; ++p) tsl_tma_2d_mc(tsl_smem(&(b5')
        i = c.index('tsl_tma_2d_mc(')
        j = c.index(', bar);', i)
        c = c[:j] + ', bar, 3);' + c[j + len(', bar);'):]
        fn = 'tsl_mbar_arrive_peer' + ('_rc' if remote_sem else '')
        def rep(m):
            a = m.group(1)
            if spread:  # lane 0 arrives here, lane 1 on the peer
                return ('if (lane % 32 == 0) tsl_mbar_arrive(' + a + '); else if (lane % 32 == 1) ' + fn + '(' + a + ', peer);')
            return 'if (lane % 32 == 0) { tsl_mbar_arrive(' + a + '); ' + fn + '(' + a + ', peer); }'
        c, n = re.subn(r'if \(lane % 32 == 0\) tsl_mbar_arrive\((mb1 [^;]*)\);', rep, c)
        assert n == 2
    k = c.rindex('\n}')
    c = c[:k] + '\n  tsl_cluster_sync();' + c[k:]
    return c[c.index('extern "C" __global__'):]

helpers = r'''
static __device__ __forceinline__ void tsl_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void tsl_mbar_arrive_peer_rc(unsigned a, unsigned peer) {
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" :: "r"(a), "r"(peer) : "memory");
}
static __device__ __forceinline__ void tsl_mbar_arrive_peer(unsigned a, unsigned peer) {
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" :: "r"(a), "r"(peer) : "memory");
}
static __device__ __forceinline__ void tsl_tma_2d_mc(unsigned dst, const tsl_tensor_map* map, int c0, int c1, unsigned mbar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(mbar), "h"(mask) : "memory");
}
'''
kb = s.index('extern "C" __global__')
out = s[:kb] + helpers + s[kb:] + '\n'
out += variant('c2', True, True, False) + '\n'        # multicast, remote arrive .release.cluster
out += variant('c2nomc', False, False, False) + '\n'  # clusters, no multicast
out += variant('c2def', True, False, False) + '\n'    # multicast, remote arrive default semantics
out += variant('c2spread', True, False, True) + '\n'  # multicast, the two arrivals from two lanes
open('kernels.cu', 'w').write(out)
