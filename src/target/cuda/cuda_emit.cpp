#include "target/cuda/cuda_emit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "ir/group_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Everything the unit needs in place of headers: integer helpers for index
// expressions (expr_to_cpp's names) and the PTX wrappers the atoms and copies use.
const char* kPrelude = R"(// Emitted by tessel (cuda target).
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
// Shared loads from a 32-bit window address. The fma atom's operand reads through
// generic pointers kept 64-bit addresses under NVRTC (nvcc makes them 32-bit), and the
// 128x128 fp32 kernel spilled 48 bytes at its 128-register bound; with these, none
// (emit_fma_mma's `read`, shared_addr's unsigned form).
static __device__ __forceinline__ float tsl_lds1(unsigned p) {
  float x; asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(x) : "r"(p)); return x;
}
static __device__ __forceinline__ float2 tsl_lds2(unsigned p) {
  float2 v; asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(p)); return v;
}
static __device__ __forceinline__ float4 tsl_lds4(unsigned p) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(p));
  return v;
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
)";

// The mbarrier and tma wrappers (PTX ISA: "mbarrier", "cp.async.bulk.tensor"),
// emitted only into programs that declare mbarriers. A tensor map parameter is
// CUtensorMap's bytes: 128, 64-byte aligned.
const char* kMbarPrelude = R"(struct __align__(64) tsl_tensor_map { unsigned long long opaque[16]; };
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
)";

// Thread-block clusters (GroupIR "clusters"), emitted only into cluster programs.
// Every block of the cluster meets at tsl_cluster_sync (release, then acquire). A
// cluster arrival arrives on the same mbarrier of every block of the cluster: at
// the default (release, CTA scope) semantics, as the consumer release of a
// multicast pipeline needs; release at cluster scope measured half as fast
// (docs/cuda.md). A multicast box lands at the same shared address of every block
// in `mask`, completing its bytes on each one's mbarrier at mbar.
const char* kClusterPrelude = R"(static __device__ __forceinline__ void tsl_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ unsigned tsl_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
static __device__ __forceinline__ void tsl_mbar_arrive_cluster(unsigned a, unsigned ranks) {
  const unsigned me = tsl_cluster_rank();
  for (unsigned q = 0; q < ranks; ++q) {
    if (q == me) {
      tsl_mbar_arrive(a);
      continue;
    }
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" :: "r"(a), "r"(q) : "memory");
  }
}
static __device__ __forceinline__ void tsl_tma_2d_multicast(unsigned dst, const tsl_tensor_map* map, int c0, int c1,
                                                            unsigned mbar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(mbar), "h"(mask) : "memory");
}
)";

std::string num(int64_t v) { return std::to_string(v); }
std::string sym(const std::string& name) { return "v_" + name; }
// An index expression as C++, every part computed where it stands.
std::string plain_ex(const Expr& e) { return expr_to_cpp(e, sym); }
int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

const char* ctype(DType t) { return t == DType::F32 ? "float" : t == DType::U32 ? "unsigned" : "unsigned short"; }

// Element of type t (an lvalue expression) as a float.
std::string to_f32(DType t, const std::string& x) {
  switch (t) {
    case DType::F32: return x;
    case DType::BF16: return "tsl_bf16_to_f32(" + x + ")";
    case DType::F16: return "tsl_f16_to_f32(" + x + ")";
    case DType::F64:
    case DType::U32: break;  // refused in check_program; only tickets touch counters
  }
  return x;
}
std::string from_f32(DType t, const std::string& x) {
  switch (t) {
    case DType::F32: return x;
    case DType::BF16: return "tsl_f32_to_bf16(" + x + ")";
    case DType::F16: return "tsl_f32_to_f16(" + x + ")";
    case DType::F64:
    case DType::U32: break;  // refused in check_program; only tickets touch counters
  }
  return x;
}
// The padding value `v` as an element of type t.
std::string pad_of(DType t, double v) {
  if (v == 0) return t == DType::F32 ? "0.0f" : "(unsigned short)0";
  return from_f32(t, float_literal(v));
}

class Emitter {
 public:
  Emitter(const GroupProgram& p, bool folded_grid, bool assume_aligned)
      : p_(p), folded_grid_(folded_grid), assume_aligned_(assume_aligned) {}

  CudaSource run() {
    check_program();
    layout_shared();
    depth_ = 1;
    emit_ops(p_.body);

    CudaSource out;
    out.threads = threads_;
    out.shared_bytes = shared_bytes_ + (swizzled_any_ ? 1024 : 0);  // room to align the base
    out.sm90a = p_.atom == AtomKind::Wgmma;
    std::string s = kPrelude;
    if (!p_.mbarriers.empty()) s += kMbarPrelude;
    if (p_.cluster > 1) s += kClusterPrelude;
    out.tensor_maps = maps_;
    out.aligned_tensors.assign(aligned_tensors_.begin(), aligned_tensors_.end());
    out.aligned_sizes.assign(aligned_sizes_.begin(), aligned_sizes_.end());
    if (!aligned_tensors_.empty() || !aligned_sizes_.empty()) {
      s += "\n// The aligned variant: its launches' tensors";
      for (int t : aligned_tensors_) s += " t" + num(t);
      s += " start on 16 bytes";
      for (const auto& [name, m] : aligned_sizes_) s += ", " + sym(name) + " % " + num(m) + " == 0";
      s += ". Other launches run the general variant.\n";
    }
    for (const WgmmaShape& w : wgmma_shapes_) s += wgmma_helper(w);
    // setmaxnreg takes effect only under a register cap with one block (HOPPER.md).
    int min_blocks = has_setmaxnreg_ ? 1 : blocks_per_multiprocessor();
    out.sm90a = out.sm90a || has_setmaxnreg_;
    std::string cluster_dims;
    if (p_.cluster > 1) {  // the cluster dimension's block index, as group_coordinates maps it
      int64_t dims[3] = {1, 1, 1};
      dims[p_.grid.size() - 1 - p_.cluster_dim] = p_.cluster;
      cluster_dims = "__cluster_dims__(" + num(dims[0]) + ", " + num(dims[1]) + ", " + num(dims[2]) + ") ";
      out.sm90a = true;
    }
    s += "\nextern \"C\" __global__ void " + cluster_dims + "__launch_bounds__(" + num(threads_) + ", " +
         num(min_blocks) + ") " + out.entry + "(";
    std::string params;
    auto param = [&](const std::string& text) { params += (params.empty() ? "" : ", ") + text; };
    for (const std::string& n : p_.size_params) param("int64_t " + sym(n));
    for (const ScalarParam& sc : p_.scalars) param("double d_" + sc.name);
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      bool in = p_.tensors[i].access == Access::In;
      param(std::string(in ? "const " : "") + ctype(p_.tensors[i].dtype) + "* __restrict__ t" + num(i));
    }
    for (size_t i = 0; i < maps_.size(); ++i) param("const __grid_constant__ tsl_tensor_map tm" + num(i));
    s += params + ") {\n";
    // Every launch on sm_90+ may begin before the previous kernel in the stream has
    // finished (programmatic dependent launch, cuda_kernel.cpp). So a block first waits
    // for that kernel to complete and its writes to be visible, before it touches any
    // memory. Without the launch attribute the wait is a no-op. No block triggers the
    // next launch early (griddepcontrol.launch_dependents): measured, that made split-K
    // calls 8-16% slower, where waiting alone made them 4-8% faster (docs/cuda.md).
    s += "#if __CUDA_ARCH__ >= 900\n";
    s += "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n";
    s += "#endif\n";
    if (swizzled_any_) {
      // Swizzled operands repeat every 1024 bytes of shared address: align the base.
      s += "  extern __shared__ __align__(1024) unsigned char smem_raw[];\n";
      s += "  unsigned char* const smem = smem_raw + ((1024 - (tsl_smem(smem_raw) & 1023)) & 1023);\n";
    } else {
      s += "  extern __shared__ __align__(128) unsigned char smem[];\n";
    }
    s += "  const unsigned smem_s = tsl_smem(smem); (void)smem_s;\n";
    s += "  const int tid = threadIdx.x, worker = tid / " + num(p_.lanes) + ", lane = tid % " +
         num(p_.lanes) + ";\n";
    s += "  (void)worker; (void)lane;\n";
    s += "  const int wr = worker / " + num(p_.worker_cols) + ", wc = worker % " + num(p_.worker_cols) + ";\n";
    s += "  const bool owns = worker < " + num(p_.worker_rows * p_.worker_cols) + ";\n";
    s += "  (void)wr; (void)wc; (void)owns;\n";
    for (const ScalarParam& sc : p_.scalars)
      s += "  const float s_" + sc.name + " = (float)d_" + sc.name + "; (void)s_" + sc.name + ";\n";
    s += group_coordinates();
    for (const auto& [name, text] : hoisted_) s += "  const int64_t " + name + " = " + text + ";\n";
    for (const Buffer& b : p_.buffers) {
      if (b.space == Space::Shared)
        s += "  " + std::string(ctype(b.dtype)) + "* const b" + num(b.id) + " = (" + ctype(b.dtype) +
             "*)(smem + " + num(offset_[b.id]) + ");  // " + b.name + "\n";
      if (b.space == Space::Private)
        s += "  float f" + num(b.id) + "[" + num(regs(b)) + "];  // " + b.name + "\n";
    }
    for (const MBarrier& b : p_.mbarriers)
      s += "  const unsigned mb" + num(b.id) + " = tsl_smem(smem + " + num(mbar_offset_[b.id]) + ");  // mbarrier " +
           b.name + "[" + num(b.slots) + "]\n";
    s += body_;
    s += "}\n";
    out.code = s;
    return out;
  }

 private:
  // Index expressions as C++. A part that holds a division, modulo, min or max is
  // computed once, as far out as what it names allows, and named there: at the
  // top of the kernel when it names only size parameters and group coordinates
  // (hoisted_), else at the top of the body of the innermost loop whose variable
  // it names, when that is not the loop it stands in (loops_). nvcc does not move
  // a division out of a loop or a guarded path, and a 64-bit division costs tens
  // of instructions: a grouped head index such as h / (Hq / Hkv) sat in every copy
  // of every step, and a persistent grid's tile coordinates (divisions of the tile
  // loop's variable) in every k step of its producer. Cheap parts stay inline.
  std::string ex(const Expr& e) const { return named_cpp(hoist(e)); }
  // As C++, where a symbol "#NAME" is a hoisted part's name.
  static std::string named_cpp(const Expr& e) {
    return expr_to_cpp(e, [](const std::string& n) { return n[0] == '#' ? n.substr(1) : sym(n); });
  }
  // 0 for an expression of size parameters and group coordinates; i + 1 when the
  // innermost loop variable it names is loops_[i]'s; -1 when it names another symbol.
  int scope_of(const Expr& e) const {
    int level = 0;
    bool other = false;
    expr_symbols(e, [&](const std::string& n) {
      if (std::find(p_.size_params.begin(), p_.size_params.end(), n) != p_.size_params.end()) return;
      if (std::any_of(p_.grid.begin(), p_.grid.end(), [&](const LoopDim& g) { return g.iv == n; })) return;
      for (size_t i = loops_.size(); i-- > 0;)
        if (loops_[i].iv == n) {
          level = std::max(level, int(i) + 1);
          return;
        }
      other = true;
    });
    return other ? -1 : level;
  }
  static bool costly(const Expr& e) {
    if (!e || e->kind == ExprKind::Const || e->kind == ExprKind::Sym) return false;
    if (e->kind != ExprKind::Add && e->kind != ExprKind::Sub && e->kind != ExprKind::Mul) return true;
    return costly(e->lhs) || costly(e->rhs);
  }
  static std::string named(std::vector<std::pair<std::string, std::string>>& defs, const std::string& text,
                           const std::string& prefix, int& count) {
    for (const auto& [name, t] : defs)
      if (t == text) return name;
    defs.push_back({prefix + num(count++), text});
    return defs.back().first;
  }
  Expr hoist(const Expr& e) const {
    if (!e || e->kind == ExprKind::Const || e->kind == ExprKind::Sym) return e;
    const int level = costly(e) ? scope_of(e) : -1;
    if (level == 0) return expr_sym("#" + named(hoisted_, plain_ex(e), "tsl_u", hoisted_count_));
    Expr parts = expr_binary(e->kind, hoist(e->lhs), hoist(e->rhs));
    if (level > 0 && level < int(loops_.size())) {
      return expr_sym("#" + named(loops_[level - 1].defs, named_cpp(parts), "tsl_l", loop_count_));
    }
    return parts;
  }

  void check_program() {
    if (p_.workers < 1) user_error(ErrorKind::Verify, "program needs at least one worker");
    if (p_.lanes != 1 && p_.lanes != 32 && p_.lanes != 128)
      user_error(ErrorKind::Unsupported, "cuda target: " + num(p_.lanes) + " lanes per worker (1, 32 or 128)");
    if (p_.lanes != atom_lanes(p_.atom))
      user_error(ErrorKind::Unsupported, std::string("cuda target: the ") + atom_name(p_.atom) + " atom needs " +
                                             num(atom_lanes(p_.atom)) + " lanes per worker, not " + num(p_.lanes));
    if (p_.grid.size() > 3)
      user_error(ErrorKind::Unsupported, "cuda target: a grid of " + num(p_.grid.size()) +
                                             " dimensions (at most 3)");
    // A folded grid decodes the coordinates from blockIdx.x, which a cluster
    // along another dimension does not follow.
    if (p_.cluster > 1 && folded_grid_ && p_.grid.size() > 1)
      user_error(ErrorKind::Unsupported, "cuda target: a grid of clusters too large for blockIdx.y and z "
                                         "(65535 each): it cannot fold into x");
    threads_ = p_.workers * p_.lanes;
    if (threads_ > 1024)
      user_error(ErrorKind::Plan, "cuda target: " + num(threads_) + " threads per block (" +
                                      num(p_.workers) + " workers x " + num(p_.lanes) +
                                      " lanes); a block holds at most 1024");
    for (const TensorParam& t : p_.tensors)
      if (t.dtype == DType::F64)
        user_error(ErrorKind::Unsupported, "cuda target: tensor " + t.name + " is f64 (the sim and cpu targets take f64)");
    for (const Buffer& b : p_.buffers)
      if (b.dtype == DType::F64)
        user_error(ErrorKind::Unsupported, "cuda target: buffer " + b.name + " is f64 (the sim and cpu targets take f64)");
    check_ops(p_.body);
    mark_warp_releases();
    mark_tma_destinations(p_.body);
    for (const Buffer& b : p_.buffers)
      if (b.space == Space::Private) check_frag(b);
    if (p_.atom == AtomKind::Wgmma) mark_wgmma_operands(p_.body);
    find_redundant_fences(p_.body);
    std::map<int, DType> pack_dtype;
    find_pack_reads(p_.body, pack_dtype);
    for (const auto& [frag, dtype] : pack_dtype)
      if (dtype != DType::F32) rounded_by_pack_[frag] = dtype;
  }

  // Group coordinates: the last grid dimension is blockIdx.x, the ones before it y
  // and z. A launch whose y or z would pass the device's 65535 folds the whole
  // grid into x (cuda_grid) and runs the variant emitted with folded_grid, which
  // decodes blockIdx.x; the plain variant pays nothing for it (a decode behind a
  // run-time flag cost small GEMMs 5%).
  std::string group_coordinates() const {
    const size_t n = p_.grid.size();
    static const char* dims[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
    std::string s;
    if (!folded_grid_ || n == 1) {
      for (size_t i = 0; i < n; ++i) s += "  const int64_t " + sym(p_.grid[i].iv) + " = " + dims[n - 1 - i] + ";\n";
      return s;
    }
    // 32-bit arithmetic: a folded grid has fewer than 2^31 blocks.
    s = "  unsigned g = blockIdx.x;\n";
    for (size_t i = n; i-- > 0;) {
      if (i == 0) {
        s += "  const int64_t " + sym(p_.grid[i].iv) + " = g;\n";
      } else {
        std::string e = "(unsigned)(" + plain_ex(p_.grid[i].extent) + ")";
        s += "  const int64_t " + sym(p_.grid[i].iv) + " = g % " + e + ";\n  g /= " + e + ";\n";
      }
    }
    return s;
  }

  // What the atom supports, op by op. The fma atom (a worker is a thread) takes
  // every op. The mma.sync atom (a worker is a warp) also takes vectors laid out
  // like the accumulator's rows or columns (see part), elementwise ops that
  // broadcast them onto an accumulator, and reductions that stay inside a worker
  // (Local). The wgmma atom keeps to elementwise ops on fragments of one shape (the
  // accumulator's), loads and stores of them.
  void check_ops(const std::vector<GroupOp>& ops) {
    const bool fma = p_.lanes == 1;
    auto unsupported = [&](const GroupOp& op, const std::string& what) {
      user_error(ErrorKind::Unsupported, std::string(group_op_name(op.kind)) + " #" + num(op.id) + ": " + what +
                                             " is not supported on the " + atom_name(p_.atom) +
                                             " atom (plan the fma atom)");
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      const GroupOp& op = ops[i];
      for (const auto& body : op.bodies) check_ops(body);
      if (is_mbarrier_op(op.kind) && (op.mbar < 0 || op.mbar >= static_cast<int>(p_.mbarriers.size())))
        user_error(ErrorKind::Verify, std::string(group_op_name(op.kind)) + " #" + num(op.id) +
                                          ": names mbarrier id " + num(op.mbar) + " of " + num(p_.mbarriers.size()));
      if (op.kind == GroupOpKind::MbarArrive && op.leader) {
        leader_arrived_.insert(op.mbar);
        // After a wait, only the leader thread's own tma and expect_tx: it can
        // arrive without first syncing the worker's other lanes.
        size_t j = i;
        while (j > 0 && (ops[j - 1].kind == GroupOpKind::Tma || ops[j - 1].kind == GroupOpKind::MbarExpectTx)) --j;
        if (j > 0 && j < i && ops[j - 1].kind == GroupOpKind::MbarWait) leader_thread_arrivals_.insert(op.id);
      }
      if (op.kind == GroupOpKind::MbarInit) init_counts_[op.mbar].push_back(op.mbar_count);
      has_roles_ |= op.kind == GroupOpKind::Roles;
      if (op.kind == GroupOpKind::Roles)
        for (const WorkerRole& r : op.roles) {
          // setmaxnreg is per warpgroup; named barriers number the workers from 1.
          if (r.regs && p_.lanes != 128)
            user_error(ErrorKind::Unsupported, "roles #" + num(op.id) + ": regs on the cuda target need "
                                               "warpgroup workers (the wgmma atom)");
          has_setmaxnreg_ |= r.regs != 0;
        }
      switch (op.kind) {
        case GroupOpKind::Elementwise: {
          const Buffer& d = frag(op.frag, op);
          if (static_cast<int>(op.operands.size()) != ew_arity(op.ew))
            user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": " + ew_op_name(op.ew) + " takes " +
                                              num(ew_arity(op.ew)) + " operands, got " + num(op.operands.size()));
          if (op.ew == EwOp::Cast && op.dtype == DType::F64)
            user_error(ErrorKind::Unsupported, "ew #" + num(op.id) + ": cast to f64 on the cuda target (sim and cpu only)");
          if (op.ew == EwOp::Index && op.axis != 0 && op.axis != 1)
            user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": index axis " + num(op.axis) + " (0 or 1)");
          for (const EwOperand& o : op.operands) {
            if (o.kind == EwOperand::Kind::Scalar) {
              bool found = false;
              for (const ScalarParam& sc : p_.scalars) found |= sc.name == o.scalar;
              if (!found) user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": unknown scalar '" + o.scalar + "'");
            }
            if (o.kind != EwOperand::Kind::Frag) continue;
            const Buffer& x = frag(o.frag, op);
            if (x.rows == d.rows && x.cols == d.cols) continue;
            if ((x.rows != d.rows && x.rows != 1) || (x.cols != d.cols && x.cols != 1))
              user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": operand '" + x.name + "' (" + num(x.rows) + "x" +
                                                num(x.cols) + ") does not broadcast to '" + d.name + "' (" +
                                                num(d.rows) + "x" + num(d.cols) + ")");
            if (p_.lanes == 128) unsupported(op, "a broadcast operand ('" + x.name + "' to '" + d.name + "')");
          }
          break;
        }
        case GroupOpKind::Reduce: {
          if (p_.lanes == 128) unsupported(op, std::string("reduce.") + reduce_op_name(op.reduce));
          if (!fma && op.reduce_mode != ReduceMode::Local)
            unsupported(op, std::string("reduce.") + reduce_op_name(op.reduce) + " across workers (" +
                                reduce_mode_name(op.reduce_mode) + "; plan the workers along the kept axis only," +
                                " e.g. worker_cols 1 for a row reduction)");
          if (op.axis != 0 && op.axis != 1)
            user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": axis " + num(op.axis) + " (0 or 1)");
          const bool combine = op.reduce_mode == ReduceMode::Combine;
          if (!combine && (op.operands.size() != 1 || op.operands[0].kind != EwOperand::Kind::Frag))
            user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": the source must be one fragment");
          const BufferRef* scratch = op.reduce_mode == ReduceMode::Partial ? &op.dst : combine ? &op.src : nullptr;
          if (scratch && p_.buffer(scratch->buffer).space != Space::Shared)
            user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": the scratch window must be shared memory");
          if (op.reduce_mode != ReduceMode::Partial) {
            const Buffer& d = frag(op.frag, op);
            int64_t want_r = op.axis == 0 ? 1 : combine ? op.rows : frag(op.operands[0].frag, op).rows;
            int64_t want_c = op.axis == 1 ? 1 : combine ? op.cols : frag(op.operands[0].frag, op).cols;
            if (d.rows != want_r || d.cols != want_c)
              user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": destination '" + d.name + "' is " +
                                                num(d.rows) + "x" + num(d.cols) + ", not " + num(want_r) + "x" +
                                                num(want_c));
          }
          break;
        }
        case GroupOpKind::FragStore:
          if (op.transpose) user_error(ErrorKind::Verify, "frag.store #" + num(op.id) + ": stores are not transposed");
          [[fallthrough]];
        case GroupOpKind::FragLoad:
          if (p_.buffer(window(op).buffer).space == Space::Private)
            user_error(ErrorKind::Verify, std::string(group_op_name(op.kind)) + " #" + num(op.id) +
                                              ": fragment to fragment");
          frag(op.frag, op);
          break;
        default: break;
      }
    }
  }

  // A fragment's extents against the worker grid and the atom's register blocks.
  void check_frag(const Buffer& b) {
    const std::string grid = num(p_.worker_rows) + "x" + num(p_.worker_cols);
    if (p_.lanes == 1) {
      // Extents of 1 are replicated; others split evenly (frag_part).
      if ((b.rows != 1 && b.rows % p_.worker_rows) || (b.cols != 1 && b.cols % p_.worker_cols))
        user_error(ErrorKind::Plan, "fragment " + b.name + " (" + num(b.rows) + "x" + num(b.cols) +
                                        ") does not divide over the " + grid + " worker grid");
      return;
    }
    if (p_.lanes == 32 && (b.rows == 1 || b.cols == 1)) {
      // Vectors on mma.sync (see part): a column [R, 1] splits its rows over the
      // worker rows in whole 16-row tiles, a row [1, C] its columns over the
      // worker columns in whole 8-column tiles; [1, 1] is replicated everywhere.
      bool ok = b.rows == 1 ? b.cols == 1 || (b.cols % p_.worker_cols == 0 && (b.cols / p_.worker_cols) % 8 == 0)
                            : b.rows % p_.worker_rows == 0 && (b.rows / p_.worker_rows) % 16 == 0;
      if (!ok)
        user_error(ErrorKind::Plan, "fragment " + b.name + " (" + num(b.rows) + "x" + num(b.cols) + ") over the " +
                                        grid + " worker grid: a warp's part of a vector must be whole 16-row " +
                                        "(column vector) or 8-column (row vector) mma tiles");
      return;
    }
    if ((b.rows == 1 && p_.worker_rows > 1) || (b.cols == 1 && p_.worker_cols > 1) || b.rows % p_.worker_rows ||
        b.cols % p_.worker_cols)
      user_error(ErrorKind::Unsupported, "fragment " + b.name + " (" + num(b.rows) + "x" + num(b.cols) + ") over the " +
                                             grid + " worker grid is not supported on the " + atom_name(p_.atom) +
                                             " atom (plan the fma atom)");
    int64_t pr = b.rows / p_.worker_rows, pc = b.cols / p_.worker_cols;
    if (p_.lanes == 32 && (pr % 16 || pc % 8))
      user_error(ErrorKind::Plan, "fragment " + b.name + ": a warp's part " + num(pr) + "x" + num(pc) +
                                      " is not a grid of 16x8 mma tiles");
    if (p_.lanes == 128 && (pr % 64 || pc % kWgmmaColumns || pc > 256))
      user_error(ErrorKind::Plan, "fragment " + b.name + ": a warpgroup's part " + num(pr) + "x" + num(pc) +
                                      " is not a column of 64xN wgmma tiles (N a multiple of " + num(kWgmmaColumns) +
                                      ", at most 256)");
  }

  // A wgmma instruction: operand dtype and n (B K-major exactly for tf32).
  using WgmmaShape = std::pair<DType, int64_t>;

  // wgmma reads its operands from shared memory in the 128-byte-swizzled layouts
  // (PTX ISA, "Shared Memory Matrix Layout"), in lines of 128 bytes (64 16-bit or 32
  // fp32 elements): A (m x k) K-major, one line a row; B (k x n) either MN-major, in
  // panels of one line's columns, each panel k lines (16-bit only: the instruction
  // transposes it), or K-major, one line of k a column: row panels as tall as a line
  // (a source whose rows are its unit stride, lower.cpp). Within every 8 lines,
  // 16-byte chunk c of line l sits at chunk c ^ (l % 8). That is GroupIR's RowMajor
  // A and ColPanels / RowPanels B with the chunk index permuted, so only the
  // physical address changes. fp32 operands multiply as tf32.
  void mark_wgmma_operands(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      for (const auto& body : op.bodies) mark_wgmma_operands(body);
      if (op.kind != GroupOpKind::Mma) continue;
      const Buffer& A = p_.buffer(op.a.buffer);
      const Buffer& B = p_.buffer(op.b.buffer);
      auto bad = [&](const std::string& why) {
        user_error(ErrorKind::Plan, "mma #" + num(op.id) + " (wgmma atom): " + why);
      };
      if (A.space != Space::Shared || B.space != Space::Shared) bad("operands must be in shared memory");
      if (A.dtype != B.dtype || (A.dtype != DType::BF16 && A.dtype != DType::F16 && A.dtype != DType::F32))
        bad(std::string("operands are ") + dtype_name(A.dtype) + " and " + dtype_name(B.dtype) +
            "; wgmma takes two bf16, f16 or f32 (as tf32) operands");
      const int64_t line = swizzle_line(A.dtype), kstep = wgmma_k(A.dtype);
      if (A.layout != Layout::RowMajor || A.cols != line)
        bad("A must be staged row-major with rows of " + num(line) + " elements (plan bk = " + num(line) + "), got " +
            num(A.rows) + "x" + num(A.cols));
      // tf32 reads B K-major only; 16-bit B stays MN-major (the K-major form is
      // the same instruction with imm-trans-b 0, not yet run on a GPU).
      const bool k_major = B.layout == Layout::RowPanels;
      if (!k_major && dtype_bytes(B.dtype) != 2)
        bad("tf32 wgmma needs B K-major (a source whose rows are its unit stride): it cannot transpose 32-bit B");
      if (k_major && dtype_bytes(B.dtype) == 2)
        bad("16-bit B must be staged in column panels (MN-major); K-major B is for tf32");
      if (k_major && (B.panel != line || B.rows != line || B.cols % 8))
        bad("a K-major B must be one row panel of " + num(line) + " (plan bk = " + num(line) +
            ") and whole groups of 8 columns, got " + num(B.rows) + "x" + num(B.cols));
      if (!k_major && (B.layout != Layout::ColPanels || B.panel != line || B.cols % line || B.rows % 8))
        bad("B must be staged in whole panels of " + num(line) +
            " columns and whole groups of 8 rows (plan atom 64x64), or K-major");
      if (A.rows % 64 || op.k > A.cols || op.k > B.rows)
        bad("A must hold whole 64-row tiles and both operands the whole k window");
      if (op.k % kstep || !const_multiple(op.a.col, kstep) || !const_multiple(op.b.row, k_major ? line : kstep))
        bad("k window must start and end on multiples of " + num(kstep));
      if (!const_multiple(op.a.row, 64) || !const_multiple(op.b.col, 64))
        bad("the m and n windows must start on multiples of 64");
      // Each warpgroup's B descriptor starts at its part's first column (emit_wgmma's
      // bc). In MN-major B that must be a panel's first column: the swizzle permutes
      // a line's 16-byte chunks, which a start inside the line does not follow (an
      // H100 ran 192x192 tiles over a 1x2 worker grid with nearly every output wrong).
      const int64_t part_cols = op.n / p_.worker_cols;
      if (!k_major && p_.worker_cols > 1 && part_cols % line)
        bad("the " + num(p_.worker_cols) + " warpgroups along n take " + num(part_cols) +
            " columns of B each, so the second starts inside a " + num(line) +
            "-column panel; plan whole panels a warpgroup");
      swizzled_.resize(p_.buffers.size(), false);
      swizzled_[A.id] = swizzled_[B.id] = true;
      swizzled_any_ = true;
      if (op.async) async_accumulators_.insert(op.frag);
      wgmma_shapes_.insert({A.dtype, op.n / p_.worker_cols});
    }
  }

  // Elements in a 128-byte swizzled line, and k of one wgmma instruction.
  static int64_t swizzle_line(DType t) { return 128 / dtype_bytes(t); }
  static int64_t wgmma_k(DType t) { return 32 / dtype_bytes(t); }

  bool swizzled(const Buffer& b) const { return b.id < (int)swizzled_.size() && swizzled_[b.id]; }

  // tma copies write their boxes in the 128-byte-swizzled layout (the tensor map's
  // swizzle): their destinations take the layout wgmma's operands have, lines of
  // 128 bytes: row-major with one line a row, panels of one line's columns, or, from
  // a source whose rows are its unit stride (transposed), one row panel as tall as
  // a line (each column's k values a line). A box starts on a swizzle period (8
  // lines) and a panel. The tensor maps' extents, strides and offsets are launch
  // values: size parameters only.
  void mark_tma_destinations(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      for (const auto& body : op.bodies) mark_tma_destinations(body);
      if (op.kind != GroupOpKind::Tma) continue;
      auto bad = [&](const std::string& why) {
        user_error(ErrorKind::Unsupported, "tma #" + num(op.id) + " on the cuda target: " + why);
      };
      const Buffer& S = p_.buffer(op.src.buffer);
      const Buffer& D = p_.buffer(op.dst.buffer);
      const TensorParam& t = p_.tensors.at(S.tensor);
      if (D.dtype != t.dtype || (dtype_bytes(D.dtype) != 2 && D.dtype != DType::F32))
        bad(std::string("copies ") + dtype_name(t.dtype) + " into " + dtype_name(D.dtype) +
            "; tma copies bf16, f16 or f32 elements without conversion");
      const int64_t line = swizzle_line(D.dtype);
      const bool rows = D.layout == Layout::RowMajor && D.cols == line;
      const bool panels = D.layout == Layout::ColPanels && D.panel == line;
      const bool transposed = D.layout == Layout::RowPanels && D.panel == line && D.rows == line;
      if (!rows && !panels && !transposed)
        bad("destination " + D.name + " must be row-major with " + num(line) + " columns, in panels of " + num(line) +
            " columns, or one row panel of " + num(line) + " rows (the 128-byte swizzle)");
      if (transposed ? D.cols % 8 : D.rows % 8)
        bad("destination " + D.name + " must have whole groups of 8 lines");
      if (transposed ? op.rows != line : (op.cols % line || (rows && op.cols != line)))
        bad("box " + num(op.rows) + "x" + num(op.cols) + " must be whole " + num(line) + "-element lines");
      if (transposed ? !const_multiple(op.dst.row, line) || !const_multiple(op.dst.col, 8)
                     : !const_multiple(op.dst.row, 8) || !const_multiple(op.dst.col, line))
        bad(transposed ? "the destination window must start at a constant row multiple of " + num(line) +
                             " and column multiple of 8"
                       : "the destination window must start at a constant row multiple of 8 and column multiple of " +
                             num(line));
      if (!unit(transposed ? op.src.row_stride : op.src.col_stride))
        bad(transposed ? "the source of a row panel must have row stride 1" : "the source must have column stride 1");
      if (!op.src_row_bound || !op.src_col_bound)
        bad("the source needs guards (the tensor's extent, its tensor map's dimensions)");
      const Expr& outer_stride = transposed ? op.src.col_stride : op.src.row_stride;
      for (const Expr* e : {&outer_stride, &op.src_row_bound, &op.src_col_bound, &op.src.offset})
        if (*e) expr_symbols(*e, [&](const std::string& sname) {
            if (!std::count(p_.size_params.begin(), p_.size_params.end(), sname))
              bad("'" + sname + "' in " + expr_to_string(*e) + ": a tensor map's extents, stride and offset "
                  "take size parameters only");
          });
      CudaTensorMap m;
      m.tensor = S.tensor;
      m.dtype = D.dtype;
      // The map describes memory: lines (outer) of contiguous elements (inner).
      m.box_rows = transposed ? op.cols : op.rows;
      m.box_cols = line;
      m.rows = transposed ? op.src_col_bound : op.src_row_bound;
      m.cols = transposed ? op.src_row_bound : op.src_col_bound;
      m.row_stride = outer_stride;
      m.offset = op.src.offset;
      auto same = [](const Expr& a, const Expr& b) { return (!a && !b) || (a && b && expr_equal(a, b)); };
      int found = -1;
      for (size_t i = 0; i < maps_.size(); ++i)
        if (maps_[i].tensor == m.tensor && maps_[i].box_rows == m.box_rows && same(maps_[i].rows, m.rows) &&
            same(maps_[i].cols, m.cols) && same(maps_[i].row_stride, m.row_stride) && same(maps_[i].offset, m.offset))
          found = static_cast<int>(i);
      if (found < 0) {
        found = static_cast<int>(maps_.size());
        maps_.push_back(m);
      }
      tma_map_[op.id] = found;
      swizzled_.resize(p_.buffers.size(), false);
      swizzled_[D.id] = true;
      swizzled_any_ = true;
    }
  }

  // Device function for one m64nNkK wgmma with fp32 accumulators d[0 .. N/2):
  // D += A * B (scale-d true), A K-major; 16-bit B MN-major (imm-trans-b = 1), k 16;
  // tf32 B K-major (no transpose operands), k 8.
  static std::string wgmma_name(const WgmmaShape& w) {
    return "tsl_wgmma_" + std::string(wgmma_type(w.first)) + "_n" + num(w.second);
  }
  static const char* wgmma_type(DType t) { return t == DType::F16 ? "f16" : t == DType::BF16 ? "bf16" : "tf32"; }
  static std::string wgmma_helper(const WgmmaShape& w) {
    const auto& [dtype, n] = w;
    const std::string t = wgmma_type(dtype);
    const int64_t regs = n / 2;
    std::string list, outs;
    for (int64_t i = 0; i < regs; ++i) {
      list += (i ? ", %" : "%") + num(i);
      outs += (i ? ", " : "") + std::string("\"+f\"(d[") + num(i) + "])";
    }
    // scale-d from p, imm-scale-a 1, imm-scale-b 1, then (16-bit) imm-trans-a 0 and
    // imm-trans-b 1 (B MN-major; mark_wgmma_operands keeps 16-bit B so).
    const std::string imm = dtype == DType::F32 ? "1, 1" : "1, 1, 0, 1";
    return "static __device__ __forceinline__ void " + wgmma_name(w) +
           "(float* d, unsigned long long a, unsigned long long b) {\n"
           "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + num(regs + 2) + ", 0;\\n"
           "wgmma.mma_async.sync.aligned.m64n" + num(n) + "k" + num(wgmma_k(dtype)) + ".f32." + t + "." + t + " {" +
           list + "}, %" + num(regs) + ", %" + num(regs + 1) + ", p, " + imm + ";\\n}\\n\"\n"
           "    : " + outs + "\n    : \"l\"(a), \"l\"(b), \"r\"(1) : \"memory\");\n}\n";
  }

  // Physical line (row or panel) length in elements, padded to an odd number of
  // 16-byte chunks when it is a multiple of 32 bytes (see the header).
  int64_t padded_line(int64_t elems, DType t) const {
    int64_t bytes = elems * dtype_bytes(t);
    if (bytes % 16 != 0 || (bytes / 16) % 2 != 0) return elems;
    return elems + 16 / dtype_bytes(t);
  }

  void layout_shared() {
    offset_.assign(p_.buffers.size(), 0);
    slot_.assign(p_.buffers.size(), 0);
    line_.assign(p_.buffers.size(), 0);
    int64_t at = 0;
    for (const Buffer& b : p_.buffers) {
      if (b.space != Space::Shared) continue;
      int64_t lines = 0, line = 0;
      if (swizzled(b)) {  // 128-byte lines, unpadded: the swizzle spreads the banks
        lines = b.layout == Layout::RowMajor ? b.rows : b.layout == Layout::ColPanels ? b.cols / b.panel
                                                                                      : b.rows / b.panel;
        line = b.layout == Layout::RowMajor ? b.cols : b.layout == Layout::ColPanels ? b.rows * b.panel
                                                                                     : b.cols * b.panel;
        at = round_up(at, 1024);
        line_[b.id] = line;
        slot_[b.id] = round_up(lines * line * dtype_bytes(b.dtype), 1024);
        offset_[b.id] = at;
        at += slot_[b.id] * std::max(1, b.versions);
        continue;
      }
      switch (b.layout) {
        case Layout::RowMajor: lines = b.rows; line = padded_line(b.cols, b.dtype); break;
        case Layout::ColPanels:
          lines = (b.cols + b.panel - 1) / b.panel;
          line = padded_line(b.rows * b.panel, b.dtype);
          break;
        case Layout::RowPanels:
          lines = (b.rows + b.panel - 1) / b.panel;
          line = padded_line(b.cols * b.panel, b.dtype);
          break;
      }
      line_[b.id] = line;
      slot_[b.id] = round_up(lines * line * dtype_bytes(b.dtype), 128);  // bytes per version
      offset_[b.id] = at;
      at += slot_[b.id] * std::max(1, b.versions);
    }
    at = round_up(at, 8);
    for (const MBarrier& m : p_.mbarriers) {
      mbar_offset_.push_back(at);
      at += 8 * m.slots;
    }
    ticket_offset_ = at;  // the word a ticket's leader hands the drawn ticket on in
    if (takes_tickets(p_.body)) at += 8;
    at = round_up(at, 16);
    stage_offset_ = at;
    stage_cols_ = staging_columns(at);
    if (stage_cols_ > 0) at += p_.worker_rows * p_.worker_cols * stage_bytes();
    shared_bytes_ = at;
  }

  void line(const std::string& s) { body_ += std::string(2 * depth_, ' ') + s + "\n"; }
  void open(const std::string& s) { line(s.empty() ? "{" : s + " {"); ++depth_; }
  void close() { --depth_; line("}"); }

  // Base pointer of a buffer in one version.
  std::string base(const BufferRef& ref) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space == Space::Global) return "t" + num(b.tensor);
    std::string base = "b" + num(b.id);
    int64_t v = 0;
    if (!ref.version || (expr_is_const(ref.version, &v) && v == 0)) return base;
    int64_t elems = slot_[b.id] / dtype_bytes(b.dtype);
    return "(" + base + " + (int)(" + ex(ref.version) + ") * " + num(elems) + ")";
  }

  // Index of element (r, c) (C++ expressions, absolute in the buffer): global
  // buffers through the ref's strides and offset, others through their layout.
  std::string index(const BufferRef& ref, const std::string& r, const std::string& c) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space != Space::Global) return index(b, r, c);
    TESSEL_ASSERT(ref.row_stride && ref.col_stride, "global ref without strides");
    std::string s = "(int64_t)(" + r + ") * (" + ex(ref.row_stride) + ")";
    s += unit(ref.col_stride) ? " + (" + c + ")" : " + (int64_t)(" + c + ") * (" + ex(ref.col_stride) + ")";
    if (ref.offset && !is_zero(ref.offset)) s = "(" + ex(ref.offset) + ") + " + s;
    return s;
  }
  static bool unit(const Expr& e) {
    int64_t v = 0;
    return e && expr_is_const(e, &v) && v == 1;
  }
  static bool is_zero(const Expr& e) {
    int64_t v = 0;
    return expr_is_const(e, &v) && v == 0;
  }

  // Index of element (r, c) of a shared or private buffer, by its layout.
  std::string index(const Buffer& b, const std::string& r, const std::string& c) const {
    TESSEL_ASSERT(b.space != Space::Global, "global buffers are indexed through their refs");
    std::string R = "(int)(" + r + ")", C = "(int)(" + c + ")", P = num(b.panel), L = num(line_[b.id]);
    if (swizzled(b)) {
      // Element x of 128-byte line l (E elements, chunks of c): chunk x/c moves to
      // (x/c) ^ (l%8). RowMajor: line l = row r; ColPanels(E): panels of rows x E,
      // line r of its panel; RowPanels(E): panels of E x cols, line c of its panel.
      const int64_t e = swizzle_line(b.dtype), c = 16 / dtype_bytes(b.dtype);
      const std::string E = num(e), shift = num(c == 8 ? 3 : 2), mask = num(c - 1);
      std::string at, x, l;
      switch (b.layout) {
        case Layout::RowMajor: at = R + " * " + E, x = C, l = R; break;
        case Layout::ColPanels:
          at = "(" + C + " / " + E + ") * " + L + " + " + R + " * " + E, x = "(" + C + " % " + E + ")", l = R;
          break;
        case Layout::RowPanels:
          at = "(" + R + " / " + E + ") * " + L + " + " + C + " * " + E, x = "(" + R + " % " + E + ")", l = C;
          break;
      }
      return at + " + ((((" + x + ") >> " + shift + ") ^ (" + l + " & 7)) << " + shift + ") + ((" + x + ") & " +
             mask + ")";
    }
    switch (b.layout) {
      case Layout::RowMajor: return R + " * " + L + " + " + C;
      case Layout::ColPanels: return "(" + C + " / " + P + ") * " + L + " + " + R + " * " + P + " + " + C + " % " + P;
      case Layout::RowPanels: return "(" + R + " / " + P + ") * " + L + " + " + C + " * " + P + " + " + R + " % " + P;
    }
    return "";
  }

  std::string at(const BufferRef& ref, const std::string& r, const std::string& c) const {
    return base(ref) + "[" + index(ref, r, c) + "]";
  }

  // Shared-window address (32 bits) of element (r, c) of a shared buffer's version,
  // for the instructions that take one (ldmatrix, cp.async): smem_s is the window
  // address of the dynamic shared memory, the rest is 32-bit arithmetic. With
  // `unsigned_index` the version's and the element's offsets, in elements, are scaled
  // to bytes together, unsigned: the fma atom's reads in that form left the 128x128
  // fp32 kernel at 128 registers without a spill, where the form below spilled 20
  // bytes (ptxas's choice, found by trying forms under NVRTC).
  std::string shared_addr(const BufferRef& ref, const std::string& r, const std::string& c,
                          bool unsigned_index = false) const {
    const Buffer& b = p_.buffer(ref.buffer);
    TESSEL_ASSERT(b.space == Space::Shared, "shared_addr of a buffer outside shared memory");
    std::string bytes = num(offset_[b.id]);
    int64_t v = 0;
    const bool versioned = ref.version && !(expr_is_const(ref.version, &v) && v == 0);
    if (unsigned_index) {
      const int64_t size = dtype_bytes(b.dtype);
      const std::string version =
          versioned ? "(int)(" + ex(ref.version) + ") * " + num(slot_[b.id] / size) + " + " : "";
      return "smem_s + " + bytes + "u + " + num(size) + "u * (unsigned)(" + version + "(" + index(b, r, c) + "))";
    }
    if (versioned) bytes += " + (int)(" + ex(ref.version) + ") * " + num(slot_[b.id]);
    return "smem_s + (unsigned)(" + bytes + " + (" + index(b, r, c) + ") * " + num(dtype_bytes(b.dtype)) + ")";
  }

  // Byte offset, as a C++ expression, of moving (dr, dc) in a shared buffer whose
  // layout is linear in such moves: any for row-major, a multiple of the panel along
  // a paneled axis. ldmatrix addresses are one base per op plus these constants
  // (the unrolled k and n steps), so nvcc folds them into the instructions'
  // immediate offsets instead of keeping an address register per step.
  std::string shared_step(const Buffer& b, const std::string& dr, const std::string& dc) const {
    TESSEL_ASSERT(!swizzled(b), "shared_step of a swizzled buffer");
    const std::string L = num(line_[b.id]), P = num(b.panel);
    std::string e;
    switch (b.layout) {
      case Layout::RowMajor: e = "(" + dr + ") * " + L + " + (" + dc + ")"; break;
      case Layout::RowPanels: e = "(" + dr + ") / " + P + " * " + L + " + (" + dc + ") * " + P; break;
      case Layout::ColPanels: e = "(" + dc + ") / " + P + " * " + L + " + (" + dr + ") * " + P; break;
    }
    return "(unsigned)((" + e + ") * " + num(dtype_bytes(b.dtype)) + ")";
  }

  // Are `v` consecutive columns starting at a multiple of v contiguous in memory?
  bool columns_contiguous(const BufferRef& ref, int64_t v) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space == Space::Global) return unit(ref.col_stride);  // alignment checked at run time
    return columns_contiguous(b, v);
  }
  bool columns_contiguous(const Buffer& b, int64_t v) const {
    TESSEL_ASSERT(b.space != Space::Global, "global buffers are judged through their refs");
    if (swizzled(b)) return b.layout != Layout::RowPanels && (16 / dtype_bytes(b.dtype)) % v == 0;  // whole chunks
    if (b.layout == Layout::RowMajor) return line_[b.id] % v == 0;
    if (b.layout == Layout::ColPanels) return b.panel % v == 0 && line_[b.id] % v == 0;
    return false;
  }

  // Run-time condition that a copy's global windows (source, destination or both)
  // hold aligned vectors of `v` elements (`bytes` bytes); "" when neither is global.
  std::string copy_aligned(const GroupOp& op, int64_t v, int64_t bytes) const {
    std::string s;
    for (const BufferRef* r : {&op.src, &op.dst})
      if (p_.buffer(r->buffer).space == Space::Global)
        s += (s.empty() ? "(" : " && (") + global_aligned(*r, v, ex(r->col), bytes) + ")";
    return s;
  }
  // Run-time condition that vectors of `v` elements (`bytes` bytes) starting at
  // column `col` of every row of a unit-col-stride global ref are aligned.
  std::string global_aligned(const BufferRef& ref, int64_t v, const std::string& col, int64_t bytes) const {
    std::string s = base_aligned(p_.buffer(ref.buffer), ref.row_stride, v, bytes);
    s += (s.empty() ? "(" : " && (") + col + ") % " + num(v) + " == 0";
    if (ref.offset && !is_zero(ref.offset)) s += " && (" + ex(ref.offset) + ") % " + num(v) + " == 0";
    return s;
  }
  // Run-time condition that global buffer b's tensor starts on a multiple of `bytes`
  // and that `stride` (between its rows, or its columns) is a multiple of v elements;
  // "" when both are assumed. The aligned variant (assume_aligned_) assumes them
  // where they follow from its tensors starting on 16 bytes and its bare size
  // parameters being multiples of 16 bytes, and records what it assumed
  // (CudaSource::aligned_tensors, aligned_sizes) for the launch to check.
  std::string base_aligned(const Buffer& b, const Expr& stride, int64_t v, int64_t bytes) const {
    const int64_t line = 16 / dtype_bytes(b.dtype);  // elements in 16 bytes
    std::string s;
    if (assume_aligned_ && 16 % bytes == 0)
      aligned_tensors_.insert(b.tensor);
    else
      s = "((unsigned long long)t" + num(b.tensor) + ") % " + num(bytes) + " == 0";
    if (assume_aligned_ && stride->kind == ExprKind::Sym && line % v == 0) {
      int64_t& m = aligned_sizes_[stride->name];
      m = std::max(m, line);
    } else {
      s += (s.empty() ? "(" : " && (") + ex(stride) + ") % " + num(v) + " == 0";
    }
    return s;
  }

  // The raw bits of a vector of `bytes` (16, or 8 or 4 for rows off 16 bytes) as a C++ type, its
  // zero, and the async copy of one.
  static std::string vec_type(int64_t bytes) { return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned"; }
  static std::string vec_zero(int64_t bytes) {
    return bytes == 16 ? "make_uint4(0, 0, 0, 0)" : bytes == 8 ? "make_uint2(0, 0)" : "0u";
  }
  static std::string cp_async(int64_t bytes) { return "tsl_cp_async" + num(bytes); }

  // Whether e is a multiple of v for every value of its symbols: a constant one,
  // a product with one, or a sum or difference of them.
  static bool const_multiple(const Expr& e, int64_t v) {
    int64_t x = 0;
    if (expr_is_const(e, &x)) return x % v == 0;
    if (e->kind == ExprKind::Mul) return const_multiple(e->lhs, v) || const_multiple(e->rhs, v);
    if (e->kind == ExprKind::Add || e->kind == ExprKind::Sub)
      return const_multiple(e->lhs, v) && const_multiple(e->rhs, v);
    return false;
  }

  void emit_op(const GroupOp& op) {
    // A loop or branch of the leader thread's copies alone (a refill: wait for the
    // stage's release, expect its bytes, issue the tma): the other threads skip it
    // rather than wait for a release that only the leader acts on.
    if ((op.kind == GroupOpKind::For || op.kind == GroupOpKind::If) && !in_leader_block_ &&
        leader_thread_body({op})) {
      open("if (" + leader_thread() + ")");
      in_leader_block_ = true;
      emit_op(op);
      in_leader_block_ = false;
      close();
      return;
    }
    switch (op.kind) {
      case GroupOpKind::Copy: emit_copy(op); return;
      case GroupOpKind::AsyncCommit: line("asm volatile(\"cp.async.commit_group;\\n\" ::);  // #" + num(op.id)); return;
      case GroupOpKind::AsyncWait:
        line("asm volatile(\"cp.async.wait_group " + num(op.pending) + ";\\n\" ::);  // #" + num(op.id));
        return;
      case GroupOpKind::MmaWait:
        // wgmma groups (one per async mma); other atoms complete when issued.
        if (p_.atom == AtomKind::Wgmma) {
          line("asm volatile(\"wgmma.wait_group.sync.aligned " + num(op.pending) + ";\\n\" ::: \"memory\");  // #" +
               num(op.id));
          // The accumulators are registers the compiler could otherwise read (or
          // move) before the wait: tie each to it.
          for (int f : async_accumulators_)
            line("#pragma unroll\n" + std::string(2 * depth_, ' ') + "for (int i = 0; i < " + num(regs(p_.buffer(f))) +
                 "; ++i) asm volatile(\"\" : \"+f\"(f" + num(f) + "[i]) :: \"memory\");");
        }
        return;
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier:
        // wgmma reads shared memory through the async proxy: make this thread's
        // generic-proxy writes (stores, cp.async) visible to it before the barrier.
        if (p_.atom == AtomKind::Wgmma) line("asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");");
        line("__syncthreads();  // " + std::string(group_op_name(op.kind)) + " #" + num(op.id));
        return;
      case GroupOpKind::FragFill:
      case GroupOpKind::FragLoad:
      case GroupOpKind::FragStore:
      case GroupOpKind::Elementwise: emit_run({&op}); return;
      case GroupOpKind::Mma: emit_mma(op); return;
      case GroupOpKind::Reduce: emit_reduce(op); return;
      case GroupOpKind::Call:
        user_error(ErrorKind::Unsupported, "cuda target: op #" + num(op.id) + " calls '" + op.callee +
                                               "', and opaque calls are not supported");
      case GroupOpKind::For: {
        open("for (int64_t " + sym(op.iv) + " = " + ex(op.lo) + "; " + sym(op.iv) + " < " + ex(op.hi) +
             "; ++" + sym(op.iv) + ")");
        loops_.push_back({op.iv, body_.size(), {}});
        emit_ops(op.bodies.at(0));
        std::string defs;  // what the body's expressions computed once per iteration (hoist)
        for (const auto& [name, text] : loops_.back().defs)
          defs += std::string(2 * depth_, ' ') + "const int64_t " + name + " = " + text + ";\n";
        body_.insert(loops_.back().at, defs);
        loops_.pop_back();
        close();
        return;
      }
      case GroupOpKind::If:
        open("if (" + cond(op.cond) + ")");
        emit_ops(op.bodies.at(0));
        if (op.bodies.size() > 1 && !op.bodies[1].empty()) {
          --depth_;
          open("} else");
          emit_ops(op.bodies[1]);
        }
        close();
        return;
      case GroupOpKind::MbarInit: {
        const MBarrier& b = p_.mbarriers.at(op.mbar);
        // The init is made visible to the copy engine too; the fence that must
        // follow (GroupIR's rule) makes it visible to the other threads.
        line("if (" + leader_thread() + ") {  // mbar.init #" + num(op.id));
        line("  for (int s = 0; s < " + num(b.slots) + "; ++s) tsl_mbar_init(mb" + num(b.id) + " + 8 * s, " +
             num(warp_released_.count(b.id) ? op.mbar_count / 32 : op.mbar_count * warp_arrivals(b.id)) + ");");
        line("  asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");");
        line("}");
        return;
      }
      case GroupOpKind::MbarArrive:
        if (leader_thread_arrivals_.count(op.id)) {
          line("if (" + leader_thread() + ") " + arrive_call(op) + ";  // mbar.arrive #" + num(op.id) + " leader");
          return;
        }
        if (op.leader) {
          line("// mbar.arrive #" + num(op.id) + " leader");
          open("if (worker == " + num(leader_worker_) + ")");
        } else {
          line("// mbar.arrive #" + num(op.id));
          open("");
        }
        // The worker's lanes first: what each did is then the arrival's to release.
        // A warpgroup worker arrives once per warp where every arrival on the
        // mbarrier is a whole worker's (its count scaled at init), else once.
        if (warp_released_.count(op.mbar)) {
          line("__syncwarp();");
          line("if (tid % 32 == 0) " + arrive_call(op) + ";");
        } else if (p_.lanes == 32 || warp_arrivals(op.mbar) > 1) {
          line("__syncwarp();");
          line("if (lane % 32 == 0) " + arrive_call(op) + ";");
        } else {
          if (p_.lanes == 128) line("asm volatile(\"bar.sync %0, 128;\\n\" :: \"r\"(1 + worker) : \"memory\");");
          line("if (lane == 0) " + arrive_call(op) + ";");
        }
        close();
        return;
      case GroupOpKind::MbarExpectTx:
        line("if (" + leader_thread() + ") tsl_mbar_expect_tx(" + mbar_addr(op) + ", " + num(op.mbar_count) + "u);  // mbar.expect_tx #" +
             num(op.id));
        return;
      case GroupOpKind::MbarWait:
        line("tsl_mbar_wait(" + mbar_addr(op) + ", (unsigned)(" + ex(op.parity) + "));  // mbar.wait #" + num(op.id));
        return;
      case GroupOpKind::Tma: emit_tma(op); return;
      case GroupOpKind::Roles: emit_roles(op); return;
      case GroupOpKind::ClusterSync: line("tsl_cluster_sync();  // cluster.sync #" + num(op.id)); return;
      case GroupOpKind::Ticket: emit_ticket(op); return;
    }
  }

  static bool takes_tickets(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::Ticket) return true;
      for (const auto& body : op.bodies)
        if (takes_tickets(body)) return true;
    }
    return false;
  }

  // A ticket: the running threads meet, so every store before it is done; the
  // leader then releases them to the device (a fence after the barrier), draws
  // the ticket with atomicInc (which wraps to 0 after hi - 1, as the op's rounds
  // do), fences again (acquire) and hands it on through a shared word; they meet
  // again to read it. Inside a role the meeting is a named barrier of the role's
  // threads (ids 1 + worker are the workers' own), else the block's; the named
  // one in its unaligned form, after the leader's warp reconverges, since the
  // leader reaches it apart from its lanes. The word is written and read with
  // atomics: with a plain store and loads compute-sanitizer's racecheck reported
  // hazards between them, across __syncthreads() as across a named barrier
  // (docs/results/gpu-h200-2026-12-03e/racecheck/), and none with atomics.
  void emit_ticket(const GroupOp& op) {
    std::string meet = "__syncthreads();";
    if (role_threads_ > 0) {
      if (role_threads_ % 32)
        user_error(ErrorKind::Unsupported, "ticket #" + num(op.id) + ": a role of " + num(role_threads_) +
                                               " threads (named barriers count whole warps)");
      meet = "asm volatile(\"barrier.sync " + num(kTicketBarrier) + ", " + num(role_threads_) +
             ";\\n\" ::: \"memory\");";
    }
    const Buffer& b = p_.buffer(op.dst.buffer);
    const std::string word = "(unsigned*)(smem + " + num(ticket_offset_) + ")";
    line("// ticket #" + num(op.id) + " on " + b.name);
    line(meet);
    open("if (" + leader_thread() + ")");
    line("__threadfence();");
    line("atomicExch(" + word + ", atomicInc((unsigned*)t" + num(b.tensor) + " + (" +
         index(op.dst, ex(op.dst.row), ex(op.dst.col)) + "), (unsigned)(" + ex(op.hi) + ") - 1u));");
    line("__threadfence();");
    close();
    line("__syncwarp();");
    line(meet);
    line("const int64_t " + sym(op.iv) + " = atomicAdd(" + word + ", 0u);");
  }

  // The first thread of the workers running: the group's, or a role's.
  std::string leader_thread() const { return "tid == " + num(int64_t{leader_worker_} * p_.lanes); }

  // One branch of a single if / else-if chain per role (setmaxnreg needs each
  // warpgroup's role to be one branch). A role's register request is setmaxnreg's
  // .inc above the launch's even share of the register file, .dec below it.
  void emit_roles(const GroupOp& op) {
    const int64_t share = cuda_launch_register_share(static_cast<int>(threads_));
    for (size_t r = 0; r < op.roles.size(); ++r) {
      const WorkerRole& role = op.roles[r];
      std::string cond = "worker >= " + num(role.first) + " && worker < " + num(int64_t{role.first} + role.count);
      line(std::string(r ? "} else if (" : "if (") + cond + ") {  // roles #" + num(op.id) + ": workers " +
           num(role.first) + " to " + num(int64_t{role.first} + role.count));
      ++depth_;
      if (role.regs)
        line(std::string("asm volatile(\"setmaxnreg.") + (role.regs > share ? "inc" : "dec") +
             ".sync.aligned.u32 " + num(role.regs) + ";\\n\" ::: \"memory\");");
      const int saved = leader_worker_, saved_threads = role_threads_;
      leader_worker_ = role.first;
      role_threads_ = role.count * p_.lanes;
      // A body of the leader thread's work alone (waits, tma, expect_tx, its own
      // arrivals) runs on that thread: the role's other lanes would only spin.
      const bool leader_only = leader_thread_body(op.bodies.at(r));
      if (leader_only) open("if (" + leader_thread() + ")");
      emit_ops(op.bodies.at(r));
      if (leader_only) close();
      leader_worker_ = saved;
      role_threads_ = saved_threads;
      --depth_;
    }
    line("}");
  }

  bool leader_thread_body(const std::vector<GroupOp>& ops) const {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::For && leader_thread_body(op.bodies.at(0))) continue;
      if (op.kind == GroupOpKind::If && leader_thread_body(op.bodies.at(0)) &&
          (op.bodies.size() < 2 || leader_thread_body(op.bodies[1])))
        continue;
      if (op.kind == GroupOpKind::MbarWait || op.kind == GroupOpKind::Tma || op.kind == GroupOpKind::MbarExpectTx)
        continue;
      if (op.kind == GroupOpKind::MbarArrive && leader_thread_arrivals_.count(op.id)) continue;
      return false;
    }
    return true;
  }

  // The shared address of the slot of the mbarrier `op` names.
  std::string arrive_call(const GroupOp& op) const {
    if (op.cluster_wide) return "tsl_mbar_arrive_cluster(" + mbar_addr(op) + ", " + num(p_.cluster) + "u)";
    return "tsl_mbar_arrive(" + mbar_addr(op) + ")";
  }

  std::string mbar_addr(const GroupOp& op) const {
    std::string a = "mb" + num(op.mbar);
    int64_t v = 0;
    if (!op.mbar_slot || (expr_is_const(op.mbar_slot, &v) && v == 0)) return a;
    return a + " + 8 * (unsigned)(" + ex(op.mbar_slot) + ")";
  }

  // The leader issues one box per line-wide panel of the destination window, or
  // for a row panel (a transposed source) one box of its columns: the map's inner
  // coordinate is then the window's row.
  void emit_tma(const GroupOp& op) {
    const Buffer& D = p_.buffer(op.dst.buffer);
    const int map = tma_map_.at(op.id);
    const int64_t line_elems = swizzle_line(D.dtype);
    line("// tma #" + num(op.id));
    open("if (" + leader_thread() + ")");
    line("const int r = (int)(" + ex(op.src.row) + "), c = (int)(" + ex(op.src.col) + ");");
    line("const int dr = (int)(" + ex(op.dst.row) + "), dc = (int)(" + ex(op.dst.col) + ");");
    line("const unsigned bar = " + mbar_addr(op) + ";");
    // A multicast box lands in every block of the cluster (mask: all ranks).
    const std::string copy = op.cluster_wide ? "tsl_tma_2d_multicast(" : "tsl_tma_2d(";
    const std::string mask = op.cluster_wide ? ", (unsigned short)" + num((1 << p_.cluster) - 1) : "";
    if (D.layout == Layout::RowPanels) {
      line(copy + "tsl_smem(&" + base(op.dst) + "[" + index(D, "dr", "dc") + "]), &tm" + num(map) + ", r, c, bar" +
           mask + ");");
    } else {
      const std::string E = num(line_elems);
      line("#pragma unroll");
      line("for (int p = 0; p < " + num(op.cols / line_elems) + "; ++p) " + copy + "tsl_smem(&" + base(op.dst) + "[" +
           index(D, "dr", "dc + p * " + E) + "]), &tm" + num(map) + ", c + p * " + E + ", r, bar" + mask + ");");
    }
    close();
  }

  std::string cond(const Cond& c) const {
    const std::string o = cmp_op_name(c.op);
    if (!c.on_scalar) return ex(c.lhs) + " " + o + " " + ex(c.rhs);
    for (const ScalarParam& s : p_.scalars)
      if (s.name == c.scalar) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", c.value);
        return "d_" + c.scalar + " " + o + " " + buf;
      }
    user_error(ErrorKind::Verify, "if: unknown scalar '" + c.scalar + "'");
  }

  // ---- copies ----

  // dst window = src window, rows x cols, cooperatively over every thread.
  void emit_copy(const GroupOp& op) {
    const Buffer& sb = p_.buffer(op.src.buffer);
    const Buffer& db = p_.buffer(op.dst.buffer);
    if (sb.space == Space::Private || db.space == Space::Private)
      user_error(ErrorKind::Verify, "copy #" + num(op.id) + ": fragments are not copy operands");
    if (sb.dtype != db.dtype)
      user_error(ErrorKind::Unsupported, "copy #" + num(op.id) + ": " + dtype_name(sb.dtype) + " to " +
                                             dtype_name(db.dtype) + " converts; copies do not");
    if (op.rows <= 0 || op.cols <= 0) return;
    if (op.async && (sb.space != Space::Global || db.space != Space::Shared))
      user_error(ErrorKind::Unsupported, "copy #" + num(op.id) + ": async copies go from global to shared memory");
    line("// copy #" + num(op.id) + (op.async ? " (async)" : ""));
    // A destination cut to no rows (a pipeline's stage past its loop's end) takes
    // nothing: skipped whole, where each path would test every chunk. Not where
    // registers are short: the test made the two-block fp32 kernels spill more.
    if (op.dst_row_bound && registers_to_spare())
      open("if (" + ex(op.dst_row_bound) + " > " + ex(op.dst.row) + ")");
    else
      open("");
    const int64_t v = 16 / dtype_bytes(sb.dtype);
    bool vec = op.cols % v == 0 && columns_contiguous(op.src, v) && columns_contiguous(op.dst, v) &&
               (sb.space == Space::Global || const_multiple(op.src.col, v)) &&
               (db.space == Space::Global || const_multiple(op.dst.col, v)) &&
               !(db.space == Space::Global && op.dst_col_bound && sb.space == Space::Global);
    const std::string aligned = copy_aligned(op, v, 16);
    // A source whose rows are its unit stride (a transposed view) into
    // shared memory: 16-byte vectors down the window's columns (column_chunks).
    const bool by_columns = !vec && sb.space == Space::Global && db.space == Space::Shared &&
                            unit(op.src.row_stride) && !unit(op.src.col_stride) && op.rows % v == 0;
    if (by_columns) {
      open("if (" + column_aligned(op.src, v) + ")");
      if (rows_contiguous(op.dst, v))
        emit_column_vectors(op, v);
      else
        emit_column_chunks(op, v);
      --depth_;
      open("} else");
      emit_scalar_copy(op);
      close();
    } else if (vec) {
      if (!aligned.empty()) open("if (" + aligned + ")");
      emit_vector_copy(op, v);
      if (!aligned.empty()) {
        --depth_;
        // Global rows off 16 bytes but on 8 or 4 (every fp32 tensor; 16-bit ones of
        // even row strides): an async copy stays asynchronous in 8- or 4-byte
        // pieces. The scalar copy below loads synchronously, and a small matrix
        // product of such rows waited on every k step's loads (250x130x250 ran at
        // 0.32x cuBLAS).
        for (int64_t bytes : {int64_t(8), int64_t(4)}) {
          const int64_t vb = bytes / dtype_bytes(sb.dtype);
          if (op.async && vb >= 1 && light_fragments() && (bytes == 4 || registers_to_spare())) {
            open("} else if (" + copy_aligned(op, vb, bytes) + ")");
            emit_vector_copy(op, vb);
            --depth_;
          }
        }
        open("} else");
        emit_scalar_copy(op);
        close();
      }
    } else {
      emit_scalar_copy(op);
    }
    close();
  }

  // Run-time condition that v consecutive rows of every column of a global window
  // whose rows are its unit stride start on 16 bytes.
  std::string column_aligned(const BufferRef& ref, int64_t v) const {
    std::string s = base_aligned(p_.buffer(ref.buffer), ref.col_stride, v, 16);
    s += (s.empty() ? "(" : " && (") + ex(ref.row) + ") % " + num(v) + " == 0";
    if (ref.offset && !is_zero(ref.offset)) s += " && (" + ex(ref.offset) + ") % " + num(v) + " == 0";
    return s;
  }

  // Are v consecutive rows, from a multiple of v, of a column of a shared window
  // contiguous (row panels of a multiple of v, each panel's lines on 16 bytes)?
  bool rows_contiguous(const BufferRef& ref, int64_t v) const {
    const Buffer& b = p_.buffer(ref.buffer);
    return b.space == Space::Shared && !swizzled(b) && b.layout == Layout::RowPanels && b.panel % v == 0 &&
           line_[b.id] % v == 0 && const_multiple(ref.row, v);
  }

  // A source whose rows are its unit stride into row panels (rows_contiguous):
  // rows [r, r + v) of column c are 16 contiguous bytes at both ends, one vector
  // (cp.async when the copy is async). Thread e takes c = e / (rows / v) and
  // r = (e % (rows / v)) * v: a warp reads whole stretches of the tensor's
  // contiguous rows, and its stores land one padded panel apart, in distinct banks.
  // A vector wholly outside the source is zero-filled (cp.async with 0 source
  // bytes); one straddling a bound, or one the destination's guard cuts, goes
  // element by element.
  void emit_column_vectors(const GroupOp& op, int64_t v) {
    const int64_t per_col = op.rows / v;
    const std::string SR = "(" + ex(op.src.row) + " + r)", SC = "(" + ex(op.src.col) + " + c)";
    const std::string DR = "(" + ex(op.dst.row) + " + r)", DC = "(" + ex(op.dst.col) + " + c)";
    std::string src_whole, src_none, dst_whole;
    auto both = [](std::string& into, const std::string& x) { into += (into.empty() ? "" : " && ") + x; };
    auto either = [](std::string& into, const std::string& x) { into += (into.empty() ? "" : " || ") + x; };
    if (op.src_row_bound) {
      both(src_whole, SR + " + " + num(v) + " <= " + ex(op.src_row_bound));
      either(src_none, SR + " >= " + ex(op.src_row_bound));
    }
    if (op.src_col_bound) {
      both(src_whole, SC + " < " + ex(op.src_col_bound));
      either(src_none, SC + " >= " + ex(op.src_col_bound));
    }
    if (op.dst_row_bound) both(dst_whole, DR + " + " + num(v) + " <= " + ex(op.dst_row_bound));
    if (op.dst_col_bound) both(dst_whole, DC + " < " + ex(op.dst_col_bound));
    const std::string dst_ptr = "&" + at(op.dst, DR, DC), src_ptr = "&" + at(op.src, SR, SC);
    // Fast path: the whole window inside every bound, no guards and no decode.
    std::string inside = window_inside(op);
    const bool fast = threads_ % per_col == 0 && !inside.empty() && !col_step(op.src, threads_ / per_col).empty() &&
                      !col_step(op.dst, threads_ / per_col).empty();
    if (fast) {
      open("if (" + inside + ")");
      emit_strided_chunks(op, v, /*along_columns=*/true);
      --depth_;
      open("} else");
    }
    for_each_share(per_col * op.cols, [&] {
      line("const int c = e / " + num(per_col) + ", r = (e % " + num(per_col) + ") * " + num(v) + ";");
      if (!dst_whole.empty()) open("if (" + dst_whole + ")");
      // Padding other than zero cannot come from cp.async's zero fill.
      const bool zero_fill = op.async && op.constant == 0 && !src_none.empty();
      std::string vector_ok = src_whole.empty() ? "true" : src_whole;
      if (zero_fill) vector_ok = "(" + vector_ok + ") || " + src_none;
      open(vector_ok == "true" ? "" : "if (" + vector_ok + ")");
      if (op.async) {
        std::string in = zero_fill ? "!(" + src_none + ")" : "true";
        line("const bool in = " + in + ";");
        line("tsl_cp_async16(" + shared_addr(op.dst, DR, DC) + ", in ? (const void*)" + src_ptr + " : (const void*)" +
             base(op.src) + ", in ? 16 : 0);");
      } else {
        line("*(uint4*)(" + dst_ptr + ") = *(const uint4*)(" + src_ptr + ");");
      }
      if (vector_ok != "true") {
        --depth_;
        open("} else");
        line("#pragma unroll");
        line("for (int i = 0; i < " + num(v) + "; ++i) " + at(op.dst, DR + " + i", DC) + " = " +
             src_value(op, "(r + i)", "c") + ";");
      }
      close();
      if (!dst_whole.empty()) {
        --depth_;
        open("} else");
        line("#pragma unroll");
        open("for (int i = 0; i < " + num(v) + "; ++i)");
        std::string g = dst_guard(op, "(r + i)", "c");
        line("if (" + g + ") " + at(op.dst, DR + " + i", DC) + " = " + src_value(op, "(r + i)", "c") + ";");
        close();
        close();
      }
    }, /*unroll=*/false);  // rolled: an issue holds no registers, and the loop shares the fragments' registers
    if (fast) close();
  }

  // Thread e takes rows [r, r + v) of column c of the window, c = e % cols,
  // r = (e / cols) * v: each thread reads 16 contiguous bytes of the source (a
  // stretch of one of the tensor's contiguous rows), and consecutive threads store
  // to consecutive columns, so that the stores of a warp fall into distinct banks
  // of the padded column panels (v threads of one row to the same bank were 8-way
  // conflicts). A vector wholly inside the source's bounds is one 16-byte load,
  // others go element by element with the padding; the v elements are then stored
  // one by one (the destination is not contiguous along rows), each under the
  // destination's guard. The loads are synchronous.
  void emit_column_chunks(const GroupOp& op, int64_t v) {
    const Buffer& sb = p_.buffer(op.src.buffer);
    const int64_t per_col = op.rows / v;
    const std::string T = ctype(sb.dtype);
    const std::string SR = "(" + ex(op.src.row) + " + r)", SC = "(" + ex(op.src.col) + " + c)";
    std::string whole;
    if (op.src_row_bound) whole = SR + " + " + num(v) + " <= " + ex(op.src_row_bound);
    if (op.src_col_bound) whole += (whole.empty() ? "" : " && ") + SC + " < " + ex(op.src_col_bound);
    for_each_share(per_col * op.cols, [&] {
      line("const int c = e % " + num(op.cols) + ", r = (e / " + num(op.cols) + ") * " + num(v) + ";");
      line(T + " x[" + num(v) + "];");
      open(whole.empty() ? "" : "if (" + whole + ")");
      line("const uint4 w = *(const uint4*)&" + at(op.src, SR, SC) + ";");
      line("#pragma unroll");
      line("for (int i = 0; i < " + num(v) + "; ++i) x[i] = ((const " + T + "*)&w)[i];");
      if (!whole.empty()) {
        --depth_;
        open("} else");
        line("#pragma unroll");
        line("for (int i = 0; i < " + num(v) + "; ++i) x[i] = " + src_value(op, "(r + i)", "c") + ";");
      }
      close();
      line("#pragma unroll");
      open("for (int i = 0; i < " + num(v) + "; ++i)");
      std::string g = dst_guard(op, "(r + i)", "c");
      std::string assign = at(op.dst, "(" + ex(op.dst.row) + " + r + i)", "(" + ex(op.dst.col) + " + c)") + " = x[i];";
      line(g.empty() ? assign : "if (" + g + ") " + assign);
      close();
    }, /*unroll=*/false);  // rolled: the copy shares the registers of the fragments around it
  }

  // Source element (r, c) of the window with its zero-fill guard, as a value.
  std::string src_value(const GroupOp& op, const std::string& r, const std::string& c) const {
    const Buffer& sb = p_.buffer(op.src.buffer);
    std::string R = "(" + ex(op.src.row) + " + " + r + ")", C = "(" + ex(op.src.col) + " + " + c + ")";
    std::string guard;
    if (op.src_row_bound) guard += R + " < " + ex(op.src_row_bound);
    if (op.src_col_bound) guard += (guard.empty() ? "" : " && ") + C + " < " + ex(op.src_col_bound);
    std::string x = at(op.src, R, C);
    return guard.empty() ? x : "((" + guard + ") ? " + x + " : " + pad_of(sb.dtype, op.constant) + ")";
  }

  std::string dst_guard(const GroupOp& op, const std::string& r, const std::string& c) const {
    std::string R = "(" + ex(op.dst.row) + " + " + r + ")", C = "(" + ex(op.dst.col) + " + " + c + ")";
    std::string g;
    if (op.dst_row_bound) g += R + " < " + ex(op.dst_row_bound);
    if (op.dst_col_bound) g += (g.empty() ? "" : " && ") + C + " < " + ex(op.dst_col_bound);
    return g;
  }

  // Element e = tid + j * threads of the window, for every j; `body` gets r and c.
  void for_each_share(int64_t items, const std::function<void()>& body, bool unroll = true) {
    int64_t per = (items + threads_ - 1) / threads_;
    line(unroll ? "#pragma unroll" : "#pragma unroll 1");
    open("for (int j = 0; j < " + num(per) + "; ++j)");
    line("const int e = tid + j * " + num(threads_) + ";");
    if (items % threads_ != 0) line("if (e < " + num(items) + ")");
    open("");
    body();
    close();
    close();
  }

  // Element e = tid + j * threads for every j, in batches of up to 8: each batch
  // issues all its loads before its stores, so a thread has 8 global loads in
  // flight instead of one (misaligned rows take this path; one at a time, a 32x32
  // tile cost 16 round trips), while the rolled outer loop keeps registers few.
  void emit_scalar_copy(const GroupOp& op) {
    const Buffer& sb = p_.buffer(op.src.buffer);
    const int64_t items = op.rows * op.cols, per = (items + threads_ - 1) / threads_;
    const int64_t batch = std::min<int64_t>(per, 8);
    // Consecutive threads take consecutive elements of a row, or of a column where
    // the source's rows are its unit stride (a transposed view), so that a warp's
    // global reads are contiguous either way.
    const bool by_columns = sb.space == Space::Global && unit(op.src.row_stride) && !unit(op.src.col_stride);
    auto element = [&](const std::function<void()>& body) {
      line("#pragma unroll");
      open("for (int jj = 0; jj < " + num(batch) + "; ++jj)");
      line("const int j = j0 + jj, e = tid + j * " + num(threads_) + ";");
      open("if (j < " + num(per) + " && e < " + num(items) + ")");
      if (by_columns) line("const int r = e % " + num(op.rows) + ", c = e / " + num(op.rows) + ";");
      else line("const int r = e / " + num(op.cols) + ", c = e % " + num(op.cols) + ";");
      body();
      close();
      close();
    };
    line("#pragma unroll 1");
    open("for (int j0 = 0; j0 < " + num(per) + "; j0 += " + num(batch) + ")");
    line(std::string(ctype(sb.dtype)) + " tmp[" + num(batch) + "];");
    element([&] { line("tmp[jj] = " + src_value(op, "r", "c") + ";"); });
    element([&] {
      std::string g = dst_guard(op, "r", "c");
      std::string assign =
          at(op.dst, "(" + ex(op.dst.row) + " + r)", "(" + ex(op.dst.col) + " + c)") + " = tmp[jj];";
      line(g.empty() ? assign : "if (" + g + ") " + assign);
    });
    close();
  }

  // 16-byte chunks; a chunk that straddles the source's column bound is copied
  // element by element, a chunk wholly outside it is zero-filled.
  void emit_vector_copy(const GroupOp& op, int64_t v) {
    const int64_t chunks_per_row = op.cols / v;
    const std::string SR = "(" + ex(op.src.row) + " + r)", SC = "(" + ex(op.src.col) + " + c)";
    const std::string DR = "(" + ex(op.dst.row) + " + r)", DC = "(" + ex(op.dst.col) + " + c)";
    std::string row_in = op.src_row_bound ? SR + " < " + ex(op.src_row_bound) : "true";
    std::string col_full = op.src_col_bound ? SC + " + " + num(v) + " <= " + ex(op.src_col_bound) : "true";
    // A chunk wholly outside the source is zero-filled as a vector; a nonzero
    // padding goes element by element (partial), like a straddling chunk.
    std::string col_none = op.src_col_bound && op.constant == 0 ? SC + " >= " + ex(op.src_col_bound) : "false";
    std::string dguard = dst_guard(op, "r", "c");
    auto decode = [&] {
      line("const int r = e / " + num(chunks_per_row) + ", c = (e % " + num(chunks_per_row) + ") * " + num(v) + ";");
    };
    auto partial = [&] {
      open("for (int x = 0; x < " + num(v) + "; ++x)");
      std::string g = dst_guard(op, "r", "(c + x)");
      std::string assign = at(op.dst, DR, "(" + DC + " + x)") + " = " + src_value(op, "r", "(c + x)") + ";";
      line(g.empty() ? assign : "if (" + g + ") " + assign);
      close();
    };
    std::string dst_ptr = "&" + at(op.dst, DR, DC), src_ptr = "&" + at(op.src, SR, SC);
    // Fast path: the whole window lies inside the source (and destination) bounds,
    // so no chunk needs a guard; each thread's chunks are one row stride apart.
    std::string inside = window_inside(op);
    bool fast = threads_ % chunks_per_row == 0 && !inside.empty() &&
                !row_step(op.src, threads_ / chunks_per_row).empty() &&
                !row_step(op.dst, threads_ / chunks_per_row).empty();
    if (fast) {
      open("if (" + inside + ")");
      emit_strided_chunks(op, v);
      --depth_;
      open("} else");
    }
    std::string dst_addr = op.async ? shared_addr(op.dst, DR, DC) : "";
    const int64_t lines_per_pass = threads_ % chunks_per_row == 0 ? threads_ / chunks_per_row : 0;
    if (op.async && op.constant == 0 && lines_per_pass > 0 && light_fragments() &&
        !row_step(op.src, lines_per_pass).empty() && !row_step(op.dst, lines_per_pass).empty())
      emit_strided_edge_chunks(op, v);
    else
      emit_guarded_chunks(op, v, chunks_per_row, row_in, col_full, col_none, dguard, dst_ptr, dst_addr, src_ptr,
                          decode, partial);
    if (fast) close();
  }

  // A window crossing the source's bounds (an edge tile), async with zero padding:
  // emit_strided_chunks' arrangement, in which a thread keeps one column chunk in
  // every pass, so its column test is made once and each pass tests only its row
  // (the decode and both tests a chunk had cost ~50 instructions, 4x as many with
  // 4-byte pieces: the edge tiles of small shapes ran at half the speed of the
  // others). A chunk outside the source is zero-filled by cp.async (0 source bytes);
  // a thread whose chunk straddles the column bound copies element by element.
  void emit_strided_edge_chunks(const GroupOp& op, int64_t v) {
    const Buffer& db = p_.buffer(op.dst.buffer);
    const int64_t per_line = op.cols / v, lines_per_pass = threads_ / per_line;
    const int64_t passes = (op.rows + lines_per_pass - 1) / lines_per_pass;
    const int64_t bytes = v * dtype_bytes(db.dtype);
    line("const int r = tid / " + num(per_line) + ", c = (tid % " + num(per_line) + ") * " + num(v) + ";");
    const std::string SR = "(" + ex(op.src.row) + " + r)", SC = "(" + ex(op.src.col) + " + c)";
    const std::string DR = "(" + ex(op.dst.row) + " + r)", DC = "(" + ex(op.dst.col) + " + c)";
    const std::string ss = row_step(op.src, lines_per_pass), ds = row_step(op.dst, lines_per_pass);
    const std::string col_full = op.src_col_bound ? SC + " + " + num(v) + " <= " + ex(op.src_col_bound) : "true";
    const std::string col_none = op.src_col_bound ? SC + " >= " + ex(op.src_col_bound) : "false";
    const std::string ragged = op.rows % lines_per_pass != 0 ? "r + j * " + num(lines_per_pass) + " < " + num(op.rows)
                                                             : "";
    // Rolled where registers are short, so that its addresses hold few.
    auto passes_loop = [&](bool unrolled, const std::function<void()>& body) {
      line(unrolled ? "#pragma unroll" : "#pragma unroll 1");
      open("for (int j = 0; j < " + num(passes) + "; ++j)");
      if (!ragged.empty()) open("if (" + ragged + ")");
      body();
      if (!ragged.empty()) close();
      close();
    };
    // The destination's bounds (a pipeline stage past the loop's end has rows 0):
    // a chunk wholly inside its columns, and each pass's row inside.
    const std::string dst_cols = op.dst_col_bound ? " && " + DC + " + " + num(v) + " <= " + ex(op.dst_col_bound) : "";
    open("if ((" + col_full + " || " + col_none + ")" + dst_cols + ")");
    line("const bool cols_in = !(" + col_none + ");");
    line("const " + std::string(ctype(db.dtype)) + "* s = &" + at(op.src, SR, SC) + ";");
    line("const unsigned d = " + shared_addr(op.dst, DR, DC) + ";");
    // The rows left below this thread's first one, in the source and the
    // destination, as 32-bit counts made once: each pass then tests j * lines
    // against them, where 64-bit row arithmetic and compares cost ~20 instructions
    // a pass (Nsight Compute, bf16 250x130x250 on the H200).
    auto rows_left = [&](const std::string& name, const std::string& row, const Expr& bound) {
      line("const int " + name + " = (int)tsl_max(INT64_C(0), tsl_min(INT64_C(" + num(op.rows) + "), " + ex(bound) +
           " - " + row + "));");
    };
    if (op.src_row_bound) rows_left("src_rows", SR, op.src_row_bound);
    if (op.dst_row_bound) rows_left("dst_rows", DR, op.dst_row_bound);
    const std::string pass_row = "j * " + num(lines_per_pass);
    passes_loop(registers_to_spare(), [&] {
      std::string in = "cols_in";
      if (op.src_row_bound) in += " && " + pass_row + " < src_rows";
      line("const bool in = " + in + ";");
      line((op.dst_row_bound ? "if (" + pass_row + " < dst_rows) " : std::string()) + cp_async(bytes) + "(d + j * (" +
           ds + ") * " + num(dtype_bytes(db.dtype)) + ", in ? (const void*)(s + j * " + ss + ") : (const void*)" +
           base(op.src) + ", in ? " + num(bytes) + " : 0);");
    });
    --depth_;
    open("} else");
    passes_loop(false, [&] {
      line("const int rj = r + j * " + num(lines_per_pass) + ";");
      const std::string g = dst_guard(op, "rj", "(c + x)");
      line("#pragma unroll");
      line("for (int x = 0; x < " + num(v) + "; ++x) " + (g.empty() ? "" : "if (" + g + ") ") +
           at(op.dst, "(" + ex(op.dst.row) + " + rj)", "(" + DC + " + x)") + " = " + src_value(op, "rj", "(c + x)") +
           ";");
    });
    close();
  }

  // The window's bounds as one condition ("" when there are none).
  std::string window_inside(const GroupOp& op) const {
    std::string c;
    auto add = [&](const std::string& x) { c += (c.empty() ? "" : " && ") + x; };
    if (op.src_row_bound) add("(" + ex(op.src.row) + ") + " + num(op.rows) + " <= " + ex(op.src_row_bound));
    if (op.src_col_bound) add("(" + ex(op.src.col) + ") + " + num(op.cols) + " <= " + ex(op.src_col_bound));
    if (op.dst_row_bound) add("(" + ex(op.dst.row) + ") + " + num(op.rows) + " <= " + ex(op.dst_row_bound));
    if (op.dst_col_bound) add("(" + ex(op.dst.col) + ") + " + num(op.cols) + " <= " + ex(op.dst_col_bound));
    return c;
  }

  // Element offset of a buffer's (r, c) when r grows by `dr`: constant for every
  // layout as long as c stays put (the caller keeps it fixed).
  std::string row_step(const BufferRef& ref, int64_t dr) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space == Space::Global) return "(int64_t)" + num(dr) + " * (" + ex(ref.row_stride) + ")";
    if (swizzled(b))  // the chunk permutation repeats every 8 lines
      return dr % 8 == 0 && b.layout != Layout::RowPanels ? num(dr * swizzle_line(b.dtype)) : "";
    switch (b.layout) {
      case Layout::RowMajor: return num(dr * line_[b.id]);
      case Layout::ColPanels: return num(dr * b.panel);
      case Layout::RowPanels: break;
    }
    return "";
  }

  // Element offset of a buffer's (r, c) when c grows by `dc` (r fixed): "" where
  // the layout makes it depend on c.
  std::string col_step(const BufferRef& ref, int64_t dc) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space == Space::Global) return "(int64_t)" + num(dc) + " * (" + ex(ref.col_stride) + ")";
    if (swizzled(b)) return "";
    switch (b.layout) {
      case Layout::RowMajor: return num(dc);
      case Layout::RowPanels: return num(dc * b.panel);
      case Layout::ColPanels: break;
    }
    return "";
  }

  // Unguarded 16-byte chunks, pointers formed once and stepped. Along rows: thread
  // tid owns column chunk tid % cpr of rows tid / cpr + j * (threads / cpr). Along
  // columns (a source whose rows are its unit stride into row panels, as in
  // emit_column_vectors): rows chunk tid % vpc of columns tid / vpc + j * (threads
  // / vpc).
  void emit_strided_chunks(const GroupOp& op, int64_t v, bool along_columns = false) {
    const Buffer& sb = p_.buffer(op.src.buffer);
    const Buffer& db = p_.buffer(op.dst.buffer);
    const int64_t per_line = along_columns ? op.rows / v : op.cols / v, lines_per_pass = threads_ / per_line;
    const int64_t lines = along_columns ? op.cols : op.rows, passes = (lines + lines_per_pass - 1) / lines_per_pass;
    if (along_columns)
      line("const int c = tid / " + num(per_line) + ", r = (tid % " + num(per_line) + ") * " + num(v) + ";");
    else
      line("const int r = tid / " + num(per_line) + ", c = (tid % " + num(per_line) + ") * " + num(v) + ";");
    std::string ct_s = ctype(sb.dtype), ct_d = ctype(db.dtype);
    const int64_t bytes = v * dtype_bytes(sb.dtype);
    const std::string V = vec_type(bytes);
    // Async 8- and 4-byte pieces (rows off 16 bytes) come 2x or 4x as many: rolled
    // beyond 4 a thread where registers are short, so that their addresses hold few.
    const std::string unroll =
        bytes == 16 || passes <= 4 || registers_to_spare() ? "#pragma unroll" : "#pragma unroll 1";
    const std::string DR = "(" + ex(op.dst.row) + " + r)", DC = "(" + ex(op.dst.col) + " + c)";
    line("const " + ct_s + "* s = &" + at(op.src, "(" + ex(op.src.row) + " + r)", "(" + ex(op.src.col) + " + c)") + ";");
    std::string ss = along_columns ? col_step(op.src, lines_per_pass) : row_step(op.src, lines_per_pass);
    std::string ds = along_columns ? col_step(op.dst, lines_per_pass) : row_step(op.dst, lines_per_pass);
    std::string ragged;
    if (lines % lines_per_pass != 0)
      ragged = std::string("if (") + (along_columns ? "c" : "r") + " + j * " + num(lines_per_pass) + " < " + num(lines) + ")";
    if (op.async) {
      line("const unsigned d = " + shared_addr(op.dst, DR, DC) + ";");
      line(unroll);
      open("for (int j = 0; j < " + num(passes) + "; ++j)");
      if (!ragged.empty()) line(ragged);
      line("  " + cp_async(bytes) + "(d + j * (" + ds + ") * " + num(dtype_bytes(db.dtype)) + ", s + j * " + ss + ", " +
           num(bytes) + ");");
      close();
      return;
    }
    line(ct_d + "* d = &" + at(op.dst, DR, DC) + ";");
    line(V + " tmp[" + num(passes) + "];");
    line("#pragma unroll");
    open("for (int j = 0; j < " + num(passes) + "; ++j)");
    if (!ragged.empty()) line(ragged);
    line("  tmp[j] = *(const " + V + "*)(s + j * " + ss + ");");
    close();
    line("#pragma unroll");
    open("for (int j = 0; j < " + num(passes) + "; ++j)");
    if (!ragged.empty()) line(ragged);
    line("  *(" + V + "*)(d + j * " + ds + ") = tmp[j];");
    close();
  }

  template <class Decode, class Partial>
  void emit_guarded_chunks(const GroupOp& op, int64_t v, int64_t chunks_per_row, const std::string& row_in,
                           const std::string& col_full, const std::string& col_none, const std::string& dguard,
                           const std::string& dst_ptr, const std::string& dst_addr, const std::string& src_ptr,
                           Decode decode, Partial partial) {
    const int64_t bytes = v * dtype_bytes(p_.buffer(op.src.buffer).dtype);
    const std::string V = vec_type(bytes);
    if (op.async) {
      for_each_share(op.rows * chunks_per_row, [&] {
        decode();
        // Padding other than zero cannot come from cp.async's zero fill.
        open(op.constant == 0 ? "if (!(" + row_in + ") || " + col_none + " || " + col_full + ")"
                              : "if ((" + row_in + ") && " + col_full + ")");
        line("const bool in = (" + row_in + ") && !(" + col_none + ");");
        // Nothing is read when the chunk lies outside: point at the tensor's base.
        // Nothing is written outside the destination bound (a copy past the end).
        std::string issue = cp_async(bytes) + "(" + dst_addr + ", in ? (const void*)" + src_ptr +
                            " : (const void*)" + base(op.src) + ", in ? " + num(bytes) + " : 0);";
        line(dguard.empty() ? issue : "if (" + dguard + ") " + issue);
        --depth_;
        open("} else");
        partial();
        close();
      }, /*unroll=*/false);  // edge tiles only: kept rolled, its registers stay few
      return;
    }
    // Synchronous: every load of the thread's chunks is issued before the first
    // store, so the loads are in flight together.
    int64_t items = op.rows * chunks_per_row, per = (items + threads_ - 1) / threads_;
    line(V + " tmp[" + num(per) + "];");
    line("#pragma unroll");
    open("for (int j = 0; j < " + num(per) + "; ++j)");
    line("const int e = tid + j * " + num(threads_) + ";");
    if (items % threads_ != 0) line("if (e >= " + num(items) + ") break;");
    decode();
    line("tmp[j] = " + vec_zero(bytes) + ";");
    line("if ((" + row_in + ") && " + col_full + ") tmp[j] = *(const " + V + "*)(" + src_ptr + ");");
    close();
    line("#pragma unroll");
    open("for (int j = 0; j < " + num(per) + "; ++j)");
    line("const int e = tid + j * " + num(threads_) + ";");
    if (items % threads_ != 0) line("if (e >= " + num(items) + ") break;");
    decode();
    open(op.constant == 0 ? "if (" + col_full + " || !(" + row_in + "))" : "if ((" + row_in + ") && " + col_full + ")");
    std::string store = "*(" + V + "*)(" + dst_ptr + ") = tmp[j];";
    line(dguard.empty() ? store : "if (" + dguard + ") " + store);
    --depth_;
    open("} else");
    partial();
    close();
    close();
  }

  // ---- fragments ----
  // A fragment's part on one worker (frag_part): pr x pc elements at (row0, col0)
  // of the logical tile. Under the fma and mma.sync atoms an extent of 1 is
  // replicated along its worker-grid axis: every worker there holds the element,
  // the first owns it (only owners store). The wgmma atom splits every extent
  // (check_frag refuses vectors there). Registers: row-major over the part (fma),
  // the m16n8 or wgmma accumulator layout (mma atoms; see reg_rc).
  //
  // mma.sync vectors follow the accumulator so that broadcasts and reductions
  // stay in the lane: in an m16n8 tile lane l holds rows l/4 and l/4 + 8 and
  // columns 2(l%4) and 2(l%4) + 1. A column vector [R, 1] gives each lane the
  // values of the rows it holds, 2 registers per 16-row tile (replicated over the
  // 4 lanes of a quad); a row vector [1, C] the values of its columns, 2 per
  // 8-column tile (replicated over the 8 quads); [1, 1] one register in every lane.
  struct Part {
    int64_t pr = 0, pc = 0;
    bool rep_r = false, rep_c = false;
  };
  Part part(const Buffer& f) const {
    Part q;
    q.rep_r = f.rows == 1 && p_.lanes != 128;
    q.rep_c = f.cols == 1 && p_.lanes != 128;
    q.pr = q.rep_r ? 1 : f.rows / p_.worker_rows;
    q.pc = q.rep_c ? 1 : f.cols / p_.worker_cols;
    return q;
  }
  // Two blocks per multiprocessor (at most 128 registers a thread at 256 threads)
  // where fragments are small enough not to spill there: one block's barrier
  // stalls hide behind the other's math. 64-register accumulators need the room,
  // except on the fma atom with one register set, whose operands stream (A's 4 k
  // steps and one row of B: 40 registers; H200 fp32, 4096^3 and 2048^3: 6% faster
  // with 2 blocks, though ptxas spills some of the loop's copy state; tf32's
  // mma.sync fragments at 64 lost 5%). The launch bound asks for this many.
  int blocks_per_multiprocessor() const {
    int64_t frag_regs = 0;
    for (const Buffer& b : p_.buffers)
      if (b.space == Space::Private) frag_regs = std::max(frag_regs, regs(b));
    const int64_t two_block_regs = p_.atom == AtomKind::Fma && p_.frag_buffers == 1 ? 64 : 63;
    return threads_ <= 256 && frag_regs <= two_block_regs ? 2 : 1;
  }
  // Does the launch bound leave a thread all 255 registers (at most 256 threads
  // a multiprocessor)? Copy code that unrolls and keeps more addresses live is
  // emitted only then: under 128 it made ptxas spill.
  bool registers_to_spare() const { return threads_ * blocks_per_multiprocessor() <= 256; }
  // Do a thread's fragments hold at most 64 registers? The copy paths for edge
  // tiles and rows off 16 bytes that cost fewer instructions but more code (more
  // live addresses) are emitted only then: where the fragments fill the register
  // file (the flash-style row kernels, the fp32 kernels of two blocks a
  // multiprocessor), that code made ptxas spill.
  bool light_fragments() const {
    int64_t n = 0;
    for (const Buffer& b : p_.buffers)
      if (b.space == Space::Private) n += regs(b);
    return n <= 64;
  }
  int64_t regs(const Buffer& f) const {
    Part q = part(f);
    if (p_.lanes == 32 && (q.rep_r || q.rep_c)) return q.rep_r && q.rep_c ? 1 : q.rep_c ? q.pr / 8 : q.pc / 4;
    return q.pr * q.pc / p_.lanes;
  }
  std::string row0(const Buffer& f) const {
    Part q = part(f);
    return q.rep_r ? "(int64_t)0" : "(int64_t)wr * " + num(q.pr);
  }
  std::string col0(const Buffer& f) const {
    Part q = part(f);
    return q.rep_c ? "(int64_t)0" : "(int64_t)wc * " + num(q.pc);
  }
  // The condition that this worker owns its part ("" = every holder does).
  std::string owner(const Buffer& f) const {
    Part q = part(f);
    std::string s;
    if (q.rep_r && p_.worker_rows > 1) s = "wr == 0";
    if (q.rep_c && p_.worker_cols > 1) s += (s.empty() ? "" : " && ") + std::string("wc == 0");
    // mma.sync vectors: the lanes that hold an element of the vector again.
    std::string lanes;
    if (p_.lanes == 32) lanes = q.rep_r && q.rep_c ? "lane == 0" : q.rep_c ? "lane % 4 == 0" : q.rep_r ? "lane < 4" : "";
    if (!lanes.empty()) s += (s.empty() ? "" : " && ") + lanes;
    return s;
  }

  const Buffer& frag(int id, const GroupOp& op) const {
    const Buffer& f = p_.buffer(id);
    if (f.space != Space::Private)
      user_error(ErrorKind::Verify, "op #" + num(op.id) + ": '" + f.name + "' is not a fragment");
    return f;
  }

  // Row and column (within the worker's part) of register i of a fragment, as C++
  // expressions; i must be a compile-time constant after unrolling.
  std::pair<std::string, std::string> reg_rc(const Buffer& f, const std::string& i_expr) const {
    const std::string i = "(" + i_expr + ")";  // callers pass sums such as "i + 3"
    int64_t pc = part(f).pc;
    if (p_.lanes == 1) return {"(" + i + " / " + num(pc) + ")", "(" + i + " % " + num(pc) + ")"};
    if (p_.lanes == 128) {
      // wgmma accumulator: m tile t = i / (pc/2) of 64 rows; warp w = lane/32 holds
      // its rows 16w..16w+15 in the mma.sync m16n8 layout, n tile j/4 for j = i % (pc/2).
      std::string h = num(pc / 2), j = "(" + i + " % " + h + ")";
      return {"((" + i + " / " + h + ") * 64 + (lane / 32) * 16 + (lane % 32) / 4 + (" + j + " / 2 % 2) * 8)",
              "((" + j + " / 4) * 8 + (lane % 4) * 2 + " + j + " % 2)"};
    }
    // mma.sync vectors (see part): register i of a column vector is row
    // 16(i/2) + 8(i%2) + lane/4, of a row vector column 8(i/2) + 2(lane%4) + i%2.
    Part q = part(f);
    if (q.rep_r && q.rep_c) return {"0", "0"};
    if (q.rep_c) return {"((" + i + " / 2) * 16 + (" + i + " % 2) * 8 + lane / 4)", "0"};
    if (q.rep_r) return {"0", "((" + i + " / 2) * 8 + (lane % 4) * 2 + " + i + " % 2)"};
    // mma.sync accumulator: tile t = i / 4 of a (pr/16) x (pc/8) grid; within it,
    // q = i % 4 sits at row lane/4 + 8*(q/2), column 2*(lane%4) + q%2.
    std::string nt = num(pc / 8);
    return {"((" + i + " / 4) / " + nt + " * 16 + (" + i + " % 4) / 2 * 8 + lane / 4)",
            "((" + i + " / 4) % " + nt + " * 8 + (lane % 4) * 2 + " + i + " % 2)"};
  }

  // Register i of fragment `frag` in the form frag_form_ says (rolled runs).
  std::string frag_reg(int frag, const std::string& i) const {
    switch (frag_form_) {
      case FragForm::Scalar: return "v" + num(frag);
      case FragForm::Local: return "l" + num(frag) + "[" + i + "]";
      case FragForm::Registers: break;
    }
    return "f" + num(frag) + "[" + i + "]";
  }
  // Register of operand fragment x that serves register `i` of fragment d
  // (broadcast by identity: x's extent of 1 stretches over d's; check_ops keeps
  // that to the fma atom, whose registers are row-major over the part, and the
  // mma.sync atom, whose vectors hold what the accumulator's registers need: see
  // part and reg_rc).
  std::string operand_reg(const Buffer& x, const Buffer& d, const std::string& i) const {
    if (x.rows == d.rows && x.cols == d.cols) return frag_reg(x.id, i);
    Part pd = part(d), px = part(x);
    if (p_.lanes == 32) {
      const std::string f = "f" + num(x.id), j = "(" + i + ")";
      if (px.rep_r && px.rep_c) return f + "[0]";
      // d is an accumulator here (a vector broadcasts only onto a wider tile):
      // register j is element j % 4 of tile j / 4 in its (pr/16) x (pc/8) grid.
      const std::string nt = num(pd.pc / 8);
      if (px.rep_c) return f + "[(" + j + " / 4) / " + nt + " * 2 + (" + j + " % 4) / 2]";
      return f + "[(" + j + " / 4) % " + nt + " * 2 + " + j + " % 2]";
    }
    std::string r = x.rows == d.rows ? "(" + i + ") / " + num(pd.pc) : "0";
    std::string c = x.cols == d.cols ? "(" + i + ") % " + num(pd.pc) : "0";
    return "f" + num(x.id) + "[(" + r + ") * " + num(px.pc) + " + " + c + "]";
  }

  // The value of an elementwise op at register `i` (a C++ expression).
  std::string ew_value(const GroupOp& op, const std::string& i) const {
    const Buffer& dst = frag(op.frag, op);
    std::vector<std::string> x;
    for (const EwOperand& o : op.operands) {
      switch (o.kind) {
        case EwOperand::Kind::Frag: x.push_back(operand_reg(frag(o.frag, op), dst, i)); break;
        case EwOperand::Kind::Scalar: x.push_back("s_" + o.scalar); break;
        case EwOperand::Kind::Const: x.push_back(float_literal(o.value)); break;
        case EwOperand::Kind::Index: x.push_back("(float)(" + ex(o.index) + ")"); break;
      }
    }
    auto call = [&](const char* f) { return std::string(f) + "(" + x[0] + ")"; };
    switch (op.ew) {
      case EwOp::Add: return x[0] + " + " + x[1];
      case EwOp::Sub: return x[0] + " - " + x[1];
      case EwOp::Mul: return x[0] + " * " + x[1];
      case EwOp::Div: return x[0] + " / " + x[1];
      case EwOp::Max: return "tsl_max(" + x[0] + ", " + x[1] + ")";
      case EwOp::Min: return "tsl_min(" + x[0] + ", " + x[1] + ")";
      case EwOp::Exp: return call("expf");
      case EwOp::Exp2: return call("tsl_exp2");
      case EwOp::Log: return call("logf");
      case EwOp::Neg: return "-" + x[0];
      case EwOp::Abs: return call("fabsf");
      case EwOp::Sqrt: return call("sqrtf");
      case EwOp::Rsqrt: return call("rsqrtf");
      case EwOp::Recip: return call("__frcp_rn");
      case EwOp::Tanh: return call("tanhf");
      case EwOp::Cmp: return "((" + x[0] + " " + cmp_op_name(op.cmp) + " " + x[1] + ") ? 1.0f : 0.0f)";
      case EwOp::Select: return "((" + x[0] + " != 0.0f) ? " + x[1] + " : " + x[2] + ")";
      case EwOp::Cast: {  // rounds (F64 refused in check_ops), unless every read of it rounds the same way
        auto packed = rounded_by_pack_.find(dst.id);
        if (packed != rounded_by_pack_.end() && packed->second == op.dtype) return x[0];
        return to_f32(op.dtype, from_f32(op.dtype, x[0]));
      }
      case EwOp::Index: {
        using Place = std::pair<std::string, std::string>;
        auto [r, c] = frag_form_ == FragForm::Scalar ? Place("ri", "ci") : reg_rc(dst, i);
        return op.axis == 0 ? "(float)(" + row0(dst) + " + " + r + ")" : "(float)(" + col0(dst) + " + " + c + ")";
      }
      case EwOp::Copy: return x[0];
    }
    return x[0];
  }

  // ---- runs of per-register ops ----
  // Fragment loads, stores, fills and elementwise ops on fragments of one shape
  // touch register i of each fragment (and the register of a broadcast operand
  // that serves it) and the element (r(i), c(i)) of their windows only. Every
  // sequence of them is emitted as one loop over i (each register goes through the
  // whole run before the next), so a fragment that lives only inside the run needs
  // no registers of its own at once, when no memory effect of the run can reach
  // another register's element (see fusable).
  static bool per_register(const GroupOp& op) {
    return op.kind == GroupOpKind::FragLoad || op.kind == GroupOpKind::FragStore ||
           op.kind == GroupOpKind::FragFill || op.kind == GroupOpKind::Elementwise;
  }
  static bool transfer(const GroupOp& op) {
    return op.kind == GroupOpKind::FragLoad || op.kind == GroupOpKind::FragStore;
  }
  static const BufferRef& window(const GroupOp& op) { return op.kind == GroupOpKind::FragLoad ? op.src : op.dst; }

  // Can `op` join `run` (all per-register, on fragments of the run's shape)?
  bool fusable(const std::vector<const GroupOp*>& run, const GroupOp& op) const {
    const Buffer& f = p_.buffer(op.frag);
    const Buffer& first = p_.buffer(run.front()->frag);
    if (f.rows != first.rows || f.cols != first.cols) return false;
    if (!transfer(op)) return true;
    const BufferRef& r = window(op);
    const Buffer& b = p_.buffer(r.buffer);
    // Memory effects: two transfers that may alias (global buffers are one class,
    // a shared buffer is its own) where either writes must name the same window
    // the same way, so that register i of both is the same element.
    for (const GroupOp* q : run) {
      if (!transfer(*q) || (q->kind == GroupOpKind::FragLoad && op.kind == GroupOpKind::FragLoad)) continue;
      const BufferRef& s = window(*q);
      const Buffer& c = p_.buffer(s.buffer);
      bool alias = (c.space == Space::Global && b.space == Space::Global) || c.id == b.id;
      if (!alias) continue;
      bool same = c.id == b.id && expr_equal(s.row, r.row) && expr_equal(s.col, r.col) &&
                  q->transpose == op.transpose && same_expr(s.version, r.version) &&
                  same_expr(s.offset, r.offset) && same_expr(s.row_stride, r.row_stride) &&
                  same_expr(s.col_stride, r.col_stride);
      if (!same) return false;
    }
    return true;
  }
  static bool same_expr(const Expr& a, const Expr& b) { return (!a && !b) || (a && b && expr_equal(a, b)); }

  // A compiler fence that orders nothing the next one does not is left out (the
  // sim judges the GroupIR with it; dropping it here is sound by this rule alone):
  // the next fence (or barrier) of the same op list follows with only register
  // work between them (elementwise ops, fills, in-warp reductions; an async.wait,
  // which only completes this thread's own copies). Accesses before the fence and
  // after the next one are ordered by the next one, and none lie between. (A loop
  // body's last fence, whose next ones are the body's first and the one after the
  // loop, could go by the same argument; without it ptxas scheduled the head_dim
  // 128 kernels of two chained mmas into spills, so it stays.)
  bool registers_only(const GroupOp& op) const {
    return op.kind == GroupOpKind::Elementwise || op.kind == GroupOpKind::FragFill ||
           op.kind == GroupOpKind::AsyncWait || (op.kind == GroupOpKind::Reduce && op.reduce_mode == ReduceMode::Local);
  }
  // Fragments whose every read is an mma.sync a operand packed to one 16-bit dtype
  // (pack_dtype: that dtype; F32 once anything else reads them). A cast to that
  // dtype written into such a fragment need not round: the pack rounds the same
  // way (round to nearest even, and rounding twice is rounding once).
  void find_pack_reads(const std::vector<GroupOp>& ops, std::map<int, DType>& pack_dtype) const {
    auto other = [&](int frag) {
      if (frag >= 0) pack_dtype[frag] = DType::F32;
    };
    for (const GroupOp& op : ops) {
      for (const auto& body : op.bodies) find_pack_reads(body, pack_dtype);
      switch (op.kind) {
        case GroupOpKind::Elementwise:
          for (const EwOperand& o : op.operands)
            if (o.kind == EwOperand::Kind::Frag) other(o.frag);
          break;
        case GroupOpKind::Reduce:
          for (const EwOperand& o : op.operands)
            if (o.kind == EwOperand::Kind::Frag) other(o.frag);
          other(op.frag);
          break;
        case GroupOpKind::Mma: {
          other(op.frag);
          other(op.b.buffer);
          const int a = op.a.buffer;
          if (a < 0 || p_.buffer(a).space != Space::Private) break;
          const DType packed = p_.atom == AtomKind::MmaSync ? p_.buffer(op.b.buffer).dtype : DType::F32;
          auto it = pack_dtype.find(a);
          if (it == pack_dtype.end()) pack_dtype[a] = packed;
          else if (it->second != packed) it->second = DType::F32;
          break;
        }
        case GroupOpKind::FragLoad:
        case GroupOpKind::FragFill: break;  // writes only
        default: other(op.frag);
      }
    }
  }

  void find_redundant_fences(const std::vector<GroupOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      for (const auto& body : ops[i].bodies) find_redundant_fences(body);
      if (ops[i].kind != GroupOpKind::Fence) continue;
      for (size_t j = i + 1; j < ops.size(); ++j) {
        if (ops[j].kind == GroupOpKind::Fence || ops[j].kind == GroupOpKind::Barrier) {
          redundant_fences_.insert(ops[i].id);
          break;
        }
        if (!registers_only(ops[j])) break;
      }
    }
  }

  void emit_ops(const std::vector<GroupOp>& ops) {
    for (size_t i = 0; i < ops.size();) {
      if (redundant_fences_.count(ops[i].id)) {
        line("// fence #" + num(ops[i].id) + ": the next fence orders all it would (register work between)");
        ++i;
        continue;
      }
      if (!per_register(ops[i])) {
        emit_op(ops[i++]);
        continue;
      }
      std::vector<const GroupOp*> run = {&ops[i]};
      size_t j = i + 1;
      while (j < ops.size() && per_register(ops[j]) && fusable(run, ops[j])) {
        run.push_back(&ops[j]);
        ++j;
      }
      emit_run(run);
      i = j;
    }
  }

  // Elements per vector access of a run: the fma atom moves up to 16 bytes of a
  // part's row at once, the mma atoms pairs (adjacent registers are adjacent
  // columns in their layouts); 1 when some transfer cannot.
  int64_t run_vector_width(const std::vector<const GroupOp*>& run, const Part& q) const {
    int64_t vw = p_.lanes == 1 ? 8 : 2;
    while (vw > 1 && q.pc % vw != 0) vw /= 2;
    for (const GroupOp* op : run) {
      if (!transfer(*op)) continue;
      const BufferRef& ref = window(*op);
      const Buffer& b = p_.buffer(ref.buffer);
      if (op->transpose) return 1;
      // The mma atoms keep to fp32 global transfers (their epilogues).
      if (p_.lanes != 1 && (b.dtype != DType::F32 || b.space != Space::Global)) return 1;
      vw = std::min<int64_t>(vw, 16 / dtype_bytes(b.dtype));
      if (vw > 1 && !columns_contiguous(ref, vw)) return 1;
    }
    return vw;
  }

  // --- staged stores of wgmma accumulators (emit_staged_store) -----------------
  // A warpgroup's accumulator registers hold, per warp instruction, 8 rows of 32
  // bytes: stored straight to global memory, every 32-byte piece is a transaction
  // of its own, and Nsight Compute counted twice the sectors the data needs (the
  // stores of 128x256 fp32 tiles took a fifth of a 4096^3 bf16 matrix product's
  // time). So a fragment store to a global fp32 window goes through a scratch area
  // of its worker's own in shared memory, 64 rows x stage_cols_ columns at a time: the
  // registers are written there, the warpgroup meets at its named barrier, and
  // each thread then moves whole 16-byte row pieces to global memory (a warp
  // writes whole 128-byte lines). The scratch is private to the worker, like its
  // registers, so no other worker can touch it; the GroupIR is unchanged.
  static constexpr int64_t kStageRows = 64;
  // Row pitch in floats: 8 past the columns, so that the 8 rows of one float2
  // store instruction fall on different banks.
  int64_t stage_pitch() const { return stage_cols_ + 8; }
  int64_t stage_bytes() const { return kStageRows * stage_pitch() * 4; }
  // Columns of the scratch (0: no staging): the widest of 64, 32, 16 that fits
  // beside the program's own shared memory without lowering the blocks a
  // multiprocessor holds (228 KB a multiprocessor, 1 KB of it reserved per block).
  int64_t staging_columns(int64_t used) const {
    if (p_.lanes != 128 || !has_staged_store(p_.body)) return 0;
    const int64_t slack = swizzled_any_ ? 1024 : 0, sm = 228 * 1024;
    auto blocks = [&](int64_t bytes) { return sm / (bytes + slack + 1024); };
    for (int64_t cols : {64, 32, 16}) {
      const int64_t bytes = used + p_.worker_rows * p_.worker_cols * kStageRows * (cols + 8) * 4;
      if (bytes + slack <= kCudaMaxSharedBytes && blocks(bytes) >= blocks(used)) return cols;
    }
    return 0;
  }
  // A fragment store the staging serves: an accumulator part of whole 64-row
  // tiles and 16-column pieces into a global fp32 window with unit column stride.
  bool staged_store(const GroupOp& op) const {
    if (p_.lanes != 128 || op.kind != GroupOpKind::FragStore) return false;
    const Buffer& d = p_.buffer(op.dst.buffer);
    const Part q = part(p_.buffer(op.frag));
    return d.space == Space::Global && d.dtype == DType::F32 && unit(op.dst.col_stride) &&
           q.pr % kStageRows == 0 && q.pc % 16 == 0;
  }
  bool has_staged_store(const std::vector<GroupOp>& ops) const {
    for (const GroupOp& op : ops) {
      if (staged_store(op)) return true;
      for (const auto& body : op.bodies)
        if (has_staged_store(body)) return true;
    }
    return false;
  }
  // A run the staging serves whole (emit_staged_store): it ends in a staged_store,
  // and before it come loads of that store's window (fusable: a global load in a
  // run that stores globally reads the same window), fills and elementwise ops; a
  // rolled run (so its ops read at most one fragment from outside, `inputs`).
  bool staged_run(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs) const {
    if (!staged_store(*run.back()) || inputs.size() > 1) return false;
    for (size_t k = 0; k < leading_loads(run); ++k) {
      const BufferRef& r = run[k]->src;
      const Buffer& b = p_.buffer(r.buffer);
      if (b.space != Space::Global || b.dtype != DType::F32 || !unit(r.col_stride) || run[k]->transpose) return false;
    }
    return true;
  }
  // The run (a staged_run) for a part inside its bounds whose global rows start on
  // 16 bytes: r0_ID, c0_ID are the store's window origin. Pointers are formed
  // once, so that the chunks add constants (the consumers of a warp-specialized
  // kernel hold 128 accumulators in 168 registers). Per piece, once the input is in
  // the stage, a thread's loads of its 16-byte row pieces go out first, all in
  // flight at once (a load after a store to the same tensor would wait for it;
  // before the stage write they spilled the 640-thread kernels), then each element
  // of a piece goes through the run's ops.
  void emit_staged_store(const std::vector<const GroupOp*>& run, const Part& q, const std::vector<int>& inputs) {
    const GroupOp& op = *run.back();
    const std::string o = num(op.id);
    const int64_t cols = std::gcd(stage_cols_, q.pc), vecs = cols / 4, step = 128 / vecs;
    const int64_t pitch = stage_pitch();
    const size_t leading = leading_loads(run);
    emit_stage_pointers();
    // Thread `lane` moves 16-byte piece lane % vecs of row lane / vecs, and of every `step` rows after it.
    line("const float* const str = stg + (lane / " + num(vecs) + ") * " + num(pitch) + " + (lane % " + num(vecs) +
         ") * 4;");
    line("float* const gp = &" + base(op.dst) + "[" +
         index(op.dst, "r0_" + o + " + lane / " + num(vecs), "c0_" + o + " + (lane % " + num(vecs) + ") * 4") + "];");
    line("const int64_t gstep = (int64_t)" + num(step) + " * (" + ex(op.dst.row_stride) + ");");
    const std::string vs = num(kStageRows / step);
    for (size_t k = 0; k < leading; ++k) line("float4 l" + num(run[k]->frag) + "[" + vs + "];");
    for (int64_t t = 0; t < q.pr / kStageRows; ++t)
      for (int64_t c0 = 0; c0 < q.pc; c0 += cols) {
        const std::string g = "gp + " + (t ? "(int64_t)" + num(t * kStageRows / step) + " * gstep + " : std::string()) +
                              "v * gstep + " + num(c0);
        const std::string st = "*(const float4*)(str + v * " + num(step * pitch) + ")";
        if (!inputs.empty()) emit_stage_write(inputs[0], q, t, c0, cols);
        if (leading > 0) {
          line("#pragma unroll");
          open("for (int v = 0; v < " + vs + "; ++v)");
          for (size_t k = 0; k < leading; ++k) line("l" + num(run[k]->frag) + "[v] = *(const float4*)(" + g + ");");
          close();
        }
        line("#pragma unroll");
        open("for (int v = 0; v < " + vs + "; ++v)");
        if (run.size() == 1) {
          line("*(float4*)(" + g + ") = " + st + ";");
        } else {
          line("const int64_t ri = " + num(t * kStageRows) + " + lane / " + num(vecs) + " + v * " + num(step) +
               ", c4 = " + num(c0) + " + (lane % " + num(vecs) + ") * 4; (void)ri;");
          if (!inputs.empty()) line("const float4 s = " + st + ";");
          emit_piece_ops(run, inputs);
          line("*(float4*)(" + g + ") = w;");
        }
        close();
        line(stage_barrier());
      }
  }
  // Ops [from, to) of a run on one element, each fragment a scalar v<id>: the
  // inputs and what ops before `from` wrote are in scope, the rest is declared here.
  void emit_scalar_ops(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs, size_t from,
                       size_t to) {
    std::set<int> declared(inputs.begin(), inputs.end());
    for (size_t k = 0; k < from; ++k) declared.insert(run[k]->frag);
    frag_form_ = FragForm::Scalar;
    for (size_t k = from; k < to; ++k) {
      const GroupOp& op = *run[k];
      if (op.kind != GroupOpKind::FragStore && declared.insert(op.frag).second) line("float v" + num(op.frag) + ";");
      emit_run_step(op, 1, true, false);
    }
    frag_form_ = FragForm::Registers;
  }
  // A staged_run's ops, all but its store, on the four elements of one 16-byte
  // row piece, into float4 w: in scope are the piece's row and first column in
  // the part (ri, c4; an Index op reads ri and ci), its input's four values (s)
  // and its leading loads' (l<frag>[v]).
  void emit_piece_ops(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs) {
    const size_t leading = leading_loads(run);
    line("float4 w;");
    for (int e = 0; e < 4; ++e) {
      const std::string x(1, "xyzw"[e]);
      open("");
      line("const int64_t ci = c4 + " + num(e) + "; (void)ci;");
      if (!inputs.empty()) line("float v" + num(inputs[0]) + " = s." + x + ";");  // the run may write it
      for (size_t k = 0; k < leading; ++k)
        line("float v" + num(run[k]->frag) + " = l" + num(run[k]->frag) + "[v]." + x + ";");
      emit_scalar_ops(run, inputs, leading, run.size() - 1);
      line("w." + x + " = v" + num(run.back()->frag) + ";");
      close();
    }
  }
  static std::string stage_barrier() {
    return "asm volatile(\"bar.sync %0, 128;\\n\" :: \"r\"(1 + worker) : \"memory\");";
  }
  // The worker's stage (stg) and where this thread writes its registers (stw).
  void emit_stage_pointers() {
    const std::string pitch = num(stage_pitch());
    line("float* const stg = (float*)(smem + " + num(stage_offset_) + ") + worker * " +
         num(kStageRows * stage_pitch()) + ";");
    // Register pair (j, j + 1) of an m tile sits at row 16 (lane / 32) + (lane % 32) / 4 + 8 (j / 2 % 2),
    // column 8 (j / 4) + 2 (lane % 4) (reg_rc).
    line("float* const stw = stg + ((lane / 32) * 16 + (lane % 32) / 4) * " + pitch + " + (lane % 4) * 2;");
  }
  // Columns [c0, c0 + cols) of m tile t of fragment `frag` into the stage, then the
  // warpgroup meets: registers t * h + j, j in [c0 / 2, (c0 + cols) / 2), hold them.
  void emit_stage_write(int frag, const Part& q, int64_t t, int64_t c0, int64_t cols) {
    const std::string fr = "f" + num(frag);
    const int64_t h = q.pc / 2;
    line("#pragma unroll");
    open("for (int j = " + num(c0 / 2) + "; j < " + num((c0 + cols) / 2) + "; j += 2)");
    line("*(float2*)(stw + (j / 2 % 2) * " + num(8 * stage_pitch()) + " + (j / 4) * 8 - " + num(c0) +
         ") = make_float2(" + fr + "[" + num(t * h) + " + j], " + fr + "[" + num(t * h) + " + j + 1]);");
    close();
    line(stage_barrier());
  }

  // --- rolled runs (emit_staged_loop, emit_local_loop) -------------------------
  // Unrolled over a thread's registers (128 of them in the default matrix-product
  // plans), a run's guarded form, and the float2 form of a wgmma store, were most of
  // such a kernel's code, and of the time NVVM and ptxas took on it (the bf16 128x256
  // one compiled by hand without them: 200 ms, against 750 with them; numbers in
  // docs/cuda.md). They serve edge tiles and unaligned rows only. So a run that
  // stores but loads nothing, whose every fragment operand has the run's shape, and
  // whose written fragments nothing reads again (unused_after_run: the loop leaves
  // their registers as they were) goes through a rolled loop
  // over its elements there: the registers of each fragment it reads before writing
  // (its inputs) are first copied out of line, into the worker's stage in shared
  // memory (wgmma parts: a warp then writes whole rows) or else into a local array
  // of the thread's own. The loops stay rolled: NVVM's unrolled copies took the
  // persistent kernel into spills. A run may start with loads (C = A B + beta C);
  // it goes through the stage only (emit_staged_loop), and there its loads go
  // out first, a piece at a time: a rolled loop would wait on each in turn.
  bool rollable(const std::vector<const GroupOp*>& run, std::vector<int>* inputs) const {
    const Buffer& f0 = p_.buffer(run.front()->frag);
    std::set<int> written, ids;
    bool stores = false;
    auto read = [&](int f) {
      if (!written.count(f) && std::find(inputs->begin(), inputs->end(), f) == inputs->end()) inputs->push_back(f);
    };
    const size_t leading = leading_loads(run);
    for (const GroupOp* op : run) {
      ids.insert(op->id);
      if (op->kind == GroupOpKind::FragLoad && ids.size() > leading) return false;
      for (const EwOperand& o : op->operands) {
        if (o.kind != EwOperand::Kind::Frag) continue;
        const Buffer& b = p_.buffer(o.frag);
        if (b.rows != f0.rows || b.cols != f0.cols) return false;  // a broadcast: registers by index
        read(o.frag);
      }
      if (op->kind == GroupOpKind::FragStore) read(op->frag), stores = true;
      else written.insert(op->frag);
    }
    for (int f : written)
      if (!unused_after_run(run, f)) return false;
    return stores;
  }

  // Whether the registers of fragment f, as a run leaves them, are never read:
  // after the run (in its body, then in each enclosing one) an op that writes all
  // of f without reading it comes before any op that reads f or the program ends,
  // and where a loop encloses the run, its next iteration also overwrites f before
  // reading it (scanned from the loop body's top down to the run). A run that
  // scales the accumulator in place qualifies: the next tile's fill overwrites it.
  // Conservative: an op with bodies that mentions f counts as a read (a loop may
  // run no iteration, a branch may not be taken).
  enum class Touch { None, Reads, Overwrites };
  static Touch touch(const GroupOp& op, int f) {
    bool mentioned = op.frag == f || op.a.buffer == f || op.b.buffer == f || op.src.buffer == f || op.dst.buffer == f;
    bool operand = false;
    for (const EwOperand& o : op.operands) operand |= o.kind == EwOperand::Kind::Frag && o.frag == f;
    for (const auto& body : op.bodies)
      for (const GroupOp& inner : body) mentioned |= touch(inner, f) != Touch::None;
    if (!mentioned && !operand) return Touch::None;
    const bool writes_all = op.bodies.empty() && op.frag == f && !operand &&
                            (op.kind == GroupOpKind::FragFill || op.kind == GroupOpKind::FragLoad ||
                             op.kind == GroupOpKind::Elementwise);
    return writes_all ? Touch::Overwrites : Touch::Reads;
  }
  static Touch first_touch(const std::vector<GroupOp>& ops, size_t from, size_t to, int f) {
    for (size_t i = from; i < to; ++i)
      if (Touch t = touch(ops[i], f); t != Touch::None) return t;
    return Touch::None;
  }
  // The bodies from the program's down to the one holding op `id`, each with the
  // index of the op it continues in (the last: op `id`'s own index).
  using Path = std::vector<std::pair<const std::vector<GroupOp>*, size_t>>;
  static bool path_to(const std::vector<GroupOp>& ops, int id, Path* path) {
    for (size_t i = 0; i < ops.size(); ++i) {
      path->push_back({&ops, i});
      if (ops[i].id == id) return true;
      for (const auto& body : ops[i].bodies)
        if (path_to(body, id, path)) return true;
      path->pop_back();
    }
    return false;
  }
  bool unused_after_run(const std::vector<const GroupOp*>& run, int f) const {
    Path path;
    if (!path_to(p_.body, run.front()->id, &path)) return false;
    const size_t first = path.back().second, last = first + run.size() - 1;
    if (last >= path.back().first->size() || (*path.back().first)[last].id != run.back()->id) return false;
    for (size_t l = path.size(); l-- > 0;) {
      const auto& [ops, at] = path[l];
      const Touch after = first_touch(*ops, (l + 1 == path.size() ? last : at) + 1, ops->size(), f);
      if (after != Touch::None) return after == Touch::Overwrites;
      const bool in_loop = l > 0 && (*path[l - 1].first)[path[l - 1].second].kind == GroupOpKind::For;
      if (in_loop && !overwritten_from_top(path, l, last, f)) return false;
    }
    return true;
  }
  // From the top of path[l]'s body down to the run and through it (it ends at
  // index `last` of the last body), the first op that touches f overwrites it (the
  // run's own load of f counts). On the way lie roles, or branches whose other
  // bodies never touch f; a loop there may run no iteration.
  static bool overwritten_from_top(const Path& path, size_t l, size_t last, int f) {
    for (size_t d = l; d < path.size(); ++d) {
      const auto& [ops, at] = path[d];
      const bool run_body = d + 1 == path.size();
      if (Touch t = first_touch(*ops, 0, run_body ? last + 1 : at, f); t != Touch::None)
        return t == Touch::Overwrites;
      if (run_body) return false;
      const GroupOp& container = (*ops)[at];
      if (container.kind == GroupOpKind::If) {
        for (const auto& body : container.bodies)
          if (&body != path[d + 1].first && first_touch(body, 0, body.size(), f) != Touch::None) return false;
      } else if (container.kind != GroupOpKind::Roles) {
        return false;
      }
    }
    return false;
  }
  bool stageable(const Part& q, const std::vector<int>& inputs) const {
    return p_.lanes == 128 && stage_cols_ > 0 && q.pr % kStageRows == 0 && q.pc % 16 == 0 && inputs.size() <= 1;
  }
  static std::set<int> written_frags(const std::vector<const GroupOp*>& run) {
    std::set<int> written;
    for (const GroupOp* op : run)
      if (op->kind != GroupOpKind::FragStore) written.insert(op->frag);
    return written;
  }
  // Per 64-row piece of `cols` columns: the input into the stage, then each
  // thread takes every 128th element of the piece. A run's leading loads go first,
  // kLoadSlots of a thread's elements at a time, in flight together (by fusable's
  // rule no store reaches another element): more at once took the persistent
  // kernel's consumers into spills.
  static constexpr int64_t kLoadSlots = 4;
  void emit_staged_loop(const std::vector<const GroupOp*>& run, const Part& q, const std::vector<int>& inputs) {
    const int64_t cols = std::gcd(stage_cols_, q.pc), n = kStageRows * cols;
    const size_t leading = leading_loads(run);
    if (!inputs.empty()) emit_stage_pointers();
    for (int64_t t = 0; t < q.pr / kStageRows; ++t)
      for (int64_t c0 = 0; c0 < q.pc; c0 += cols) {
        if (!inputs.empty()) emit_stage_write(inputs[0], q, t, c0, cols);
        // One element e per iteration; with loads, kLoadSlots of them: e0 + 128 i.
        auto place = [&] {
          line("const int64_t ri = " + num(t * kStageRows) + " + e / " + num(cols) + ", ci = " + num(c0) +
               " + e % " + num(cols) + ";");
        };
        auto element = [&](const std::string& e) {
          line("const int e = " + e + ";");
          place();
        };
        auto scalar_ops = [&](size_t from) {
          if (!inputs.empty())
            line("float v" + num(inputs[0]) + " = stg[(e / " + num(cols) + ") * " + num(stage_pitch()) +
                 " + e % " + num(cols) + "];");
          for (size_t k = 0; k < leading; ++k)
            line("float v" + num(run[k]->frag) + " = l" + num(run[k]->frag) + "[i];");
          emit_scalar_ops(run, inputs, from, run.size());
        };
        if (leading == 0) {
          const bool vectors = staged_run(run, inputs);
          if (vectors) {
            const GroupOp& st = *run.back();
            open("if (" + global_aligned(st.dst, 4, "c0_" + num(st.id), 16) + ")");
            emit_staged_vectors(run, inputs, t, c0, cols);
            --depth_;
            open("} else");
          }
          line("#pragma unroll 1");
          open("for (int e = lane; e < " + num(n) + "; e += 128)");
          place();
          scalar_ops(0);
          close();
          if (vectors) close();
        } else {
          const std::string slots = num(kLoadSlots), loop = "for (int i = 0; i < " + slots + "; ++i)";
          line("#pragma unroll 1");
          open("for (int e0 = lane; e0 < " + num(n) + "; e0 += " + num(128 * kLoadSlots) + ")");
          for (size_t k = 0; k < leading; ++k) line("float l" + num(run[k]->frag) + "[" + slots + "];");
          line("#pragma unroll");
          open(loop);
          element("e0 + 128 * i");
          frag_form_ = FragForm::Local;
          for (size_t k = 0; k < leading; ++k) emit_run_step(*run[k], 1, true, false);
          frag_form_ = FragForm::Registers;
          close();
          line("#pragma unroll");
          open(loop);
          element("e0 + 128 * i");
          scalar_ops(leading);
          close();
          close();
        }
        if (!inputs.empty()) line(stage_barrier());
      }
  }
  // A staged_run without loads on one piece of an edge tile whose rows start on 16
  // bytes: each thread takes 4 consecutive elements of a row at a time (a warp, 4
  // rows of 128 bytes) and stores them as one float4 where all 4 are inside the
  // bounds, else one by one, guarded. One element at a time, the rolled loop ran 4
  // times the iterations, and bf16 1000x1000x1001 lost 13%. (Rows off 16 bytes keep
  // the element loop, where a warp's store is one row of 128 bytes.)
  void emit_staged_vectors(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs, int64_t t,
                           int64_t c0, int64_t cols) {
    const GroupOp& st = *run.back();
    const std::string o = num(st.id);
    line("#pragma unroll 1");
    open("for (int e = lane * 4; e < " + num(kStageRows * cols) + "; e += 512)");
    line("const int64_t ri = " + num(t * kStageRows) + " + e / " + num(cols) + ", c4 = " + num(c0) + " + e % " +
         num(cols) + ";");
    if (!inputs.empty())
      line("const float4 s = *(const float4*)&stg[(e / " + num(cols) + ") * " + num(stage_pitch()) + " + e % " +
           num(cols) + "];");
    emit_piece_ops(run, inputs);
    const char* xs[] = {"x", "y", "z", "w"};
    std::string whole;
    if (st.dst_row_bound) whole += "(r0_" + o + " + ri) < " + ex(st.dst_row_bound);
    if (st.dst_col_bound)
      whole += (whole.empty() ? "" : " && ") + ("(c0_" + o + " + c4 + 3) < " + ex(st.dst_col_bound));
    open("if (" + (whole.empty() ? std::string("true") : whole) + ")");
    line("*(float4*)&" + base(st.dst) + "[" + index(st.dst, "r0_" + o + " + ri", "c0_" + o + " + c4") + "] = w;");
    --depth_;
    open("} else");
    for (int x = 0; x < 4; ++x) {
      open("");
      line("const int64_t ci = c4 + " + num(x) + ";");
      line("const float v" + num(st.frag) + " = w." + xs[x] + ";");
      frag_form_ = FragForm::Scalar;
      emit_run_step(st, 1, true, false);
      frag_form_ = FragForm::Registers;
      close();
    }
    close();
    close();
  }
  // The run's inputs copied into local arrays, and local arrays for what it writes.
  void emit_local_copies(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs) {
    const int64_t n = regs(p_.buffer(run.front()->frag));
    for (int f : inputs) {
      line("float l" + num(f) + "[" + num(n) + "];");
      line("#pragma unroll");
      line("for (int i = 0; i < " + num(n) + "; ++i) l" + num(f) + "[i] = f" + num(f) + "[i];");
    }
    for (int f : written_frags(run))
      if (std::find(inputs.begin(), inputs.end(), f) == inputs.end()) line("float l" + num(f) + "[" + num(n) + "];");
  }
  void emit_local_loop(const std::vector<const GroupOp*>& run, const std::vector<int>& inputs, bool replicas) {
    const Buffer& f0 = p_.buffer(run.front()->frag);
    emit_local_copies(run, inputs);
    line("#pragma unroll 1");
    open("for (int i = 0; i < " + num(regs(f0)) + "; ++i)");
    auto [rr, cc] = reg_rc(f0, "i");
    line("const int64_t ri = " + rr + ", ci = " + cc + ";");
    line("(void)ri; (void)ci;");
    frag_form_ = FragForm::Local;
    for (const GroupOp* op : run) emit_run_step(*op, 1, true, replicas);
    frag_form_ = FragForm::Registers;
    close();
  }

  void emit_run(const std::vector<const GroupOp*>& run) {
    const Buffer& f0 = p_.buffer(run.front()->frag);
    const Part q = part(f0);
    const int64_t n = regs(f0);
    std::string ids;
    for (const GroupOp* op : run) ids += (ids.empty() ? "" : ", ") + std::string(group_op_name(op->kind)) + " #" + num(op->id);
    line("// " + ids);
    // Surplus workers (beyond the worker grid) hold no part: they skip transfers.
    // Runs of register math alone need no guard (their registers are unused).
    bool transfers = false;
    for (const GroupOp* op : run) transfers |= transfer(*op);
    open(transfers ? "if (owns)" : "");
    // Per transfer: its window origin for this worker's part, the condition that
    // the part lies inside its bounds, and (vector runs) that its vectors align.
    int64_t vw = run_vector_width(run, q);
    std::vector<std::string> fits_all, vec_all;
    for (const GroupOp* op : run) {
      if (!transfer(*op)) continue;
      bool load = op->kind == GroupOpKind::FragLoad;
      const BufferRef& ref = window(*op);
      const Buffer& b = p_.buffer(ref.buffer);
      std::string o = num(op->id);
      // A transposed load reads window (c, r) for fragment element (r, c).
      std::string r0 = op->transpose ? col0(f0) : row0(f0), c0 = op->transpose ? row0(f0) : col0(f0);
      int64_t er = op->transpose ? q.pc : q.pr, ec = op->transpose ? q.pr : q.pc;
      line("const int64_t r0_" + o + " = " + ex(ref.row) + " + " + r0 + ", c0_" + o + " = " + ex(ref.col) + " + " +
           c0 + ";");
      Expr rb = load ? op->src_row_bound : op->dst_row_bound, cb = load ? op->src_col_bound : op->dst_col_bound;
      if (rb) fits_all.push_back("r0_" + o + " + " + num(er) + " <= " + ex(rb));
      if (cb) fits_all.push_back("c0_" + o + " + " + num(ec) + " <= " + ex(cb));
      if (vw > 1) {
        if (b.space == Space::Global)
          vec_all.push_back(global_aligned(ref, vw, "c0_" + o, vw * dtype_bytes(b.dtype)));
        else
          vec_all.push_back("c0_" + o + " % " + num(vw) + " == 0");
      }
    }
    std::string own = owner(f0);
    if (!own.empty()) line("const bool own = " + own + ";");
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += (s.empty() ? "" : " && ") + x;
      return s;
    };
    const std::string fits = join(fits_all);
    std::vector<int> inputs;
    const bool rolled = rollable(run, &inputs), staged_loop = rolled && own.empty() && stageable(q, inputs);
    const bool staged = run.size() == 1 ? stage_cols_ > 0 && staged_store(*run[0]) && own.empty()
                                        : staged_loop && staged_run(run, inputs);
    if (staged) {
      const std::string o = num(run.back()->id), aligned = global_aligned(run.back()->dst, 4, "c0_" + o, 16);
      open("if (" + (fits.empty() ? "" : fits + " && ") + aligned + ")");
      emit_staged_store(run, q, run.size() == 1 ? std::vector<int>{run[0]->frag} : inputs);
      --depth_;
      open("} else");
    }
    if (staged_loop) {  // every form but the staged store's
      emit_staged_loop(run, q, inputs);
      if (staged) close();
      close();
      return;
    }
    std::string fast = fits;
    if (vw > 1 && !vec_all.empty()) fast += (fast.empty() ? "" : " && ") + join(vec_all);
    auto body = [&](int64_t width, bool guarded) {
      line("#pragma unroll");
      open("for (int i = 0; i < " + num(n) + "; i += " + num(width) + ")");
      auto [rr, cc] = reg_rc(f0, "i");
      line("const int64_t ri = " + rr + ", ci = " + cc + ";");
      line("(void)ri; (void)ci;");
      for (const GroupOp* op : run) emit_run_step(*op, width, guarded, !own.empty());
      close();
    };
    // Parts inside their bounds whose global rows are not aligned for vectors (a
    // leading dimension or offset that is no multiple of the vector) still move
    // whole 16-byte vectors (realigned_row); only the fma atom's row-major parts.
    bool realign = false;
    if (p_.lanes == 1 && vw > 1)
      for (const GroupOp* op : run) realign |= transfer(*op) && p_.buffer(window(*op).buffer).space == Space::Global;
    if (fast.empty()) {
      body(vw, false);
    } else {
      open("if (" + fast + ")");
      body(vw, false);
      if (realign) {
        --depth_;
        open(fits.empty() ? "} else" : "} else if (" + fits + ")");
        line("#pragma unroll");
        open("for (int rr = 0; rr < " + num(q.pr) + "; ++rr)");
        for (const GroupOp* op : run) realigned_row(*op, q, !own.empty());
        close();
      }
      if (!realign || !fits.empty()) {
        --depth_;
        open("} else");
        if (rolled && leading_loads(run) == 0) emit_local_loop(run, inputs, !own.empty());
        else body(1, true);
      }
      close();
    }
    if (staged) close();
    close();
    // A warp's lanes read each other's stores to shared memory (an mma operand
    // through ldmatrix) where barrier planning saw one worker and left no fence:
    // the warp's lanes are ordered here. (A warpgroup worker would need a named
    // barrier; no 128-lane program stores fragments to shared memory today.)
    bool shared_store = false;
    for (const GroupOp* op : run)
      shared_store |= op->kind == GroupOpKind::FragStore && p_.buffer(op->dst.buffer).space == Space::Shared;
    if (shared_store && p_.lanes == 32) line("__syncwarp();");
  }

  // How many of a run's first ops are loads.
  static size_t leading_loads(const std::vector<const GroupOp*>& run) {
    size_t k = 0;
    while (k < run.size() && run[k]->kind == GroupOpKind::FragLoad) ++k;
    return k;
  }

  // One op of a run on part row rr (all of its pc registers), the part inside its
  // bounds. A global load reads the aligned 16-byte vectors that cover the row
  // (never one without an element of the row, so never past a valid page) and
  // shifts the row out of them; a global store writes the elements before the
  // first aligned vector one by one, then whole vectors, then the rest. The shift
  // is the row's misalignment, known at run time: one case per value.
  void realigned_row(const GroupOp& op, const Part& q, bool replicas) {
    const std::string pc = num(q.pc);
    if (!transfer(op)) {
      line("#pragma unroll");
      open("for (int c = 0; c < " + pc + "; ++c)");
      line("const int i = rr * " + pc + " + c;");
      line(frag_reg(op.frag, "i") + " = " +
           (op.kind == GroupOpKind::FragFill ? float_literal(op.constant) : ew_value(op, "i")) + ";");
      close();
      return;
    }
    const bool load = op.kind == GroupOpKind::FragLoad;
    const BufferRef& ref = window(op);
    const Buffer& b = p_.buffer(ref.buffer);
    const std::string o = num(op.id);
    const std::string at_c = base(ref) + "[" + index(ref, "r0_" + o + " + rr", "c0_" + o + " + c") + "]";
    if (b.space != Space::Global) {  // shared: element by element
      line("#pragma unroll");
      open("for (int c = 0; c < " + pc + "; ++c)");
      const std::string reg = frag_reg(op.frag, "rr * " + pc + " + c");
      if (load) line(reg + " = " + to_f32(b.dtype, at_c) + ";");
      else line(std::string(replicas ? "if (own) " : "") + at_c + " = " + from_f32(b.dtype, reg) + ";");
      close();
      return;
    }
    const int64_t eb = dtype_bytes(b.dtype), V = 16 / eb;
    const std::string ct = std::string(load ? "const " : "") + ctype(b.dtype);
    open(replicas && !load ? "if (own)" : "");
    line(ct + "* p = &" + base(ref) + "[" + index(ref, "r0_" + o + " + rr", "c0_" + o) + "];");
    line("const int s = (int)(((unsigned long long)p / " + num(eb) + ") % " + num(V) + ");");
    static const char* comp[] = {".x", ".y", ".z", ".w"};
    auto reg = [&](int64_t c) { return frag_reg(op.frag, "rr * " + pc + " + " + num(c)); };
    if (load) {
      // Aligned 16-byte blocks that lie wholly inside [p, p + pc) are read as
      // vectors; the elements of a block that straddles either end are read one
      // by one, so that nothing outside the row's elements is touched (the
      // tensor's allocation may end, or begin, inside such a block).
      const int64_t nv = (V - 1 + q.pc + V - 1) / V;
      line("const uint4* v = (const uint4*)((unsigned long long)p & ~15ull);");
      line("uint4 w[" + num(nv) + "];");
      line("#pragma unroll");
      line("for (int j = 0; j < " + num(nv) + "; ++j) w[j] = j * " + num(V) + " >= s && (j + 1) * " + num(V) +
           " <= s + " + pc + " ? v[j] : make_uint4(0, 0, 0, 0);");
      open("switch (s)");
      for (int64_t k = 0; k < V; ++k) {
        line("case " + num(k) + ":");
        for (int64_t c = 0; c < q.pc; ++c) {
          int64_t x = k + c, block = x / V;
          bool whole = block * V >= k && (block + 1) * V <= k + q.pc;
          std::string word;
          if (!whole) {
            word = to_f32(b.dtype, "p[" + num(c) + "]");
          } else if (eb == 4) {
            word = "__uint_as_float(w[" + num(x / 4) + "]" + comp[x % 4] + ")";
          } else {
            word = to_f32(b.dtype, "(unsigned short)(w[" + num(x / 8) + "]" + comp[(x % 8) / 2] + (x % 2 ? " >> 16" : "") + ")");
          }
          line("  " + reg(c) + " = " + word + ";");
        }
        line("  break;");
      }
      close();
    } else {
      open("switch (s)");
      for (int64_t k = 0; k < V; ++k) {
        line("case " + num(k) + ":");
        int64_t head = std::min<int64_t>((V - k) % V, q.pc), c = 0;
        for (; c < head; ++c) line("  p[" + num(c) + "] = " + from_f32(b.dtype, reg(c)) + ";");
        for (; c + V <= q.pc; c += V) {
          std::vector<std::string> xs;
          for (int64_t x = 0; x < V; ++x) xs.push_back(reg(c + x));
          line("  *(" + vector_type(b.dtype, V) + "*)(p + " + num(c) + ") = " + vector_make(b.dtype, V, xs) + ";");
        }
        for (; c < q.pc; ++c) line("  p[" + num(c) + "] = " + from_f32(b.dtype, reg(c)) + ";");
        line("  break;");
      }
      close();
    }
    close();
  }

  // The C++ type of a vector of `w` elements of type t (4, 8 or 16 bytes).
  static std::string vector_type(DType t, int64_t w) {
    int64_t bytes = w * dtype_bytes(t);
    if (t == DType::F32) return bytes == 8 ? "float2" : bytes == 16 ? "float4" : "float";
    return bytes == 4 ? "unsigned" : bytes == 8 ? "uint2" : "uint4";
  }
  // Component k of vector v (vector_type(t, w)), as a float.
  static std::string vector_element(DType t, int64_t w, const std::string& v, int64_t k) {
    static const char* comp[] = {".x", ".y", ".z", ".w"};
    if (t == DType::F32) return w == 1 ? v : v + comp[k];
    int64_t words = w / 2;
    std::string word = words == 1 ? v : v + comp[k / 2];
    return to_f32(t, "(unsigned short)(" + word + (k % 2 ? " >> 16" : "") + ")");
  }
  // A vector (vector_type(t, w)) holding the registers `x[k]` rounded to type t.
  static std::string vector_make(DType t, int64_t w, const std::vector<std::string>& x) {
    std::vector<std::string> parts;
    if (t == DType::F32) {
      parts = x;
    } else {
      for (int64_t k = 0; k < w; k += 2) parts.push_back("tsl_pack16(" + from_f32(t, x[k]) + ", " + from_f32(t, x[k + 1]) + ")");
    }
    if (parts.size() == 1) return parts[0];
    std::string s = (t == DType::F32 ? "make_float" : "make_uint") + num(parts.size()) + "(";
    for (size_t k = 0; k < parts.size(); ++k) s += (k ? ", " : "") + parts[k];
    return s + ")";
  }

  // One op of a run for registers i .. i + width - 1 (ri, ci: register i's place).
  void emit_run_step(const GroupOp& op, int64_t width, bool guarded, bool replicas) {
    auto reg = [&](int64_t x) { return frag_reg(op.frag, "i + " + num(x)); };
    switch (op.kind) {
      case GroupOpKind::FragFill:
        for (int64_t x = 0; x < width; ++x) line(reg(x) + " = " + float_literal(op.constant) + ";");
        return;
      case GroupOpKind::Elementwise:
        for (int64_t x = 0; x < width; ++x) line(reg(x) + " = " + ew_value(op, "i + " + num(x)) + ";");
        return;
      default: break;
    }
    bool load = op.kind == GroupOpKind::FragLoad;
    const BufferRef& ref = window(op);
    const Buffer& b = p_.buffer(ref.buffer);
    std::string o = num(op.id);
    std::string r = "r0_" + o + " + " + (op.transpose ? "ci" : "ri"), c = "c0_" + o + " + " + (op.transpose ? "ri" : "ci");
    // Only owners store: replicas of a vector fragment hold the same elements.
    std::string store_if = !load && replicas ? "if (own) " : "";
    if (width > 1) {
      std::string vt = vector_type(b.dtype, width);
      std::string ptr = "(" + std::string(load ? "const " : "") + vt + "*)&" + base(ref) + "[" + index(ref, r, c) + "]";
      if (load) {
        line("{ const " + vt + " v = *" + ptr + ";");
        for (int64_t x = 0; x < width; ++x) line("  " + reg(x) + " = " + vector_element(b.dtype, width, "v", x) + ";");
        line("}");
      } else {
        std::vector<std::string> xs;
        for (int64_t x = 0; x < width; ++x) xs.push_back(reg(x));
        line(store_if + "*" + ptr + " = " + vector_make(b.dtype, width, xs) + ";");
      }
      return;
    }
    Expr rb = load ? op.src_row_bound : op.dst_row_bound, cb = load ? op.src_col_bound : op.dst_col_bound;
    std::string g;
    if (guarded && rb) g += "(" + r + ") < " + ex(rb);
    if (guarded && cb) g += (g.empty() ? "" : " && ") + ("(" + c + ") < " + ex(cb));
    std::string x = base(ref) + "[" + index(ref, r, c) + "]";
    if (load) {
      std::string v = to_f32(b.dtype, x);
      line(reg(0) + " = " + (g.empty() ? v : "(" + g + ") ? " + v + " : " + float_literal(op.constant)) + ";");
    } else {
      std::string st = x + " = " + from_f32(b.dtype, reg(0)) + ";";
      if (!g.empty()) st = "if (" + g + ") " + st;
      line(store_if + st);
    }
  }

  // ---- reductions (fma atom) ----

  std::string reduce_step(ReduceOp r, const std::string& a, const std::string& b) const {
    switch (r) {
      case ReduceOp::Sum: return "(" + a + " + " + b + ")";
      case ReduceOp::Max: return "tsl_max(" + a + ", " + b + ")";
      case ReduceOp::Min: return "tsl_min(" + a + ", " + b + ")";
    }
    return a;
  }

  // Local and Partial: each worker reduces its part of the source along the axis
  // (a = the reduced value of part line `l`), then keeps it in its part of the
  // destination (Local) or writes it to the scratch window at the worker's
  // position along the axis (Partial). Combine: each worker reduces the S partials
  // of its part's lines from the scratch window.
  void emit_reduce(const GroupOp& op) {
    const bool rows = op.axis == 1;  // reduce along columns: one value per row
    line("// reduce." + std::string(reduce_op_name(op.reduce)) + " #" + num(op.id) + " axis " + num(op.axis) + " " +
         reduce_mode_name(op.reduce_mode));
    open("if (owns)");
    if (p_.lanes == 32) {
      emit_warp_reduce(op);
      close();
      return;
    }
    if (op.reduce_mode == ReduceMode::Combine) {
      emit_combine(op);
      close();
      return;
    }
    const Buffer& x = frag(op.operands.at(0).frag, op);
    const Part q = part(x);
    const int64_t lines = rows ? q.pr : q.pc, len = rows ? q.pc : q.pr;
    auto elem = [&](const std::string& l, const std::string& k) {
      return "f" + num(x.id) + "[" + (rows ? l + " * " + num(q.pc) + " + " + k : k + " * " + num(q.pc) + " + " + l) + "]";
    };
    std::string own;
    if (op.reduce_mode == ReduceMode::Partial) {
      // Replicas hold the same partials: only owners write them (as frag.store).
      own = owner(x);
      if (!own.empty()) open("if (" + own + ")");
    }
    line("#pragma unroll");
    open("for (int l = 0; l < " + num(lines) + "; ++l)");
    line("float a = " + elem("l", "0") + ";");
    line("#pragma unroll");
    line("for (int k = 1; k < " + num(len) + "; ++k) a = " + reduce_step(op.reduce, "a", elem("l", "k")) + ";");
    if (op.reduce_mode == ReduceMode::Local) {
      line("f" + num(op.frag) + "[l] = a;");
    } else {
      const Buffer& s = p_.buffer(op.dst.buffer);
      std::string r = rows ? "(" + ex(op.dst.row) + ") + " + row0(x) + " + l" : "(" + ex(op.dst.row) + ") + wr";
      std::string c = rows ? "(" + ex(op.dst.col) + ") + wc" : "(" + ex(op.dst.col) + ") + " + col0(x) + " + l";
      line(at(op.dst, r, c) + " = " + from_f32(s.dtype, "a") + ";");
    }
    close();
    if (!own.empty()) close();
    close();
  }

  // mma.sync, Local (check_ops): register j of the destination (a vector in the
  // accumulator's layout, see part) reduces the source's registers at its row
  // (axis 1) or column (axis 0) in this lane, then the lanes that hold the rest of
  // that line: the quad's 4 lanes (xor 1, 2) for a row, the 8 quads (xor 4, 8, 16)
  // for a column. Which registers those are is known at emit time.
  void emit_warp_reduce(const GroupOp& op) {
    const bool rows = op.axis == 1;
    const Buffer& x = frag(op.operands.at(0).frag, op);
    const Buffer& d = frag(op.frag, op);
    const Part px = part(x);
    const int64_t nx = regs(x), nd = regs(d);
    // Destination register of source register i (both as laid out in part()).
    auto dst_reg = [&](int64_t i) -> int64_t {
      if (px.rep_r && px.rep_c) return 0;
      if (px.rep_c) return rows ? i : 0;        // [R, 1]: along rows it is itself
      if (px.rep_r) return rows ? 0 : i;        // [1, C]
      const int64_t nt = px.pc / 8, t = i / 4, e = i % 4;
      return rows ? (t / nt) * 2 + e / 2 : (t % nt) * 2 + e % 2;
    };
    std::vector<std::vector<int64_t>> from(nd);
    for (int64_t i = 0; i < nx; ++i) from.at(dst_reg(i)).push_back(i);
    // Lanes that hold other elements of the same line (none for a replicated axis).
    std::vector<int> masks;
    if (rows && !px.rep_c) masks = {1, 2};
    if (!rows && !px.rep_r) masks = {4, 8, 16};
    const std::string fx = "f" + num(x.id), fd = "f" + num(d.id);
    // The lane's own registers combine as a balanced tree (depth log2 n, not n - 1):
    // with few warps a multiprocessor, a serial chain of dependent adds or maxes
    // stalls on each one's latency.
    std::function<std::string(const std::vector<int64_t>&, size_t, size_t)> tree =
        [&](const std::vector<int64_t>& regs_of, size_t lo, size_t hi) -> std::string {
      if (hi - lo == 1) return fx + "[" + num(regs_of[lo]) + "]";
      const size_t mid = lo + (hi - lo) / 2;
      return reduce_step(op.reduce, tree(regs_of, lo, mid), tree(regs_of, mid, hi));
    };
    for (int64_t j = 0; j < nd; ++j) {
      open("");
      line("float a = " + tree(from[j], 0, from[j].size()) + ";");
      for (int m : masks)
        line("a = " + reduce_step(op.reduce, "a", "__shfl_xor_sync(0xffffffffu, a, " + num(m) + ")") + ";");
      line(fd + "[" + num(j) + "] = a;");
      close();
    }
  }

  // Combine: the partials of line l sit at scratch (line, s) for s < S (axis 1;
  // (s, line) for axis 0). Where the workers along the axis fill whole warps or
  // aligned lane groups (S a power of two), each thread reads S / G of them and
  // G lanes finish with xor shuffles; otherwise each thread reads all S.
  void emit_combine(const GroupOp& op) {
    const bool rows = op.axis == 1;
    const Buffer& d = frag(op.frag, op);
    const Buffer& s = p_.buffer(op.src.buffer);
    const Part q = part(d);
    // The partials of every worker along the axis (the window's S extent).
    const int64_t lines = rows ? q.pr : q.pc, S = rows ? p_.worker_cols : p_.worker_rows;
    auto partial = [&](const std::string& l, const std::string& k) {
      std::string r = rows ? "(" + ex(op.src.row) + ") + " + row0(d) + " + " + l : "(" + ex(op.src.row) + ") + " + k;
      std::string c = rows ? "(" + ex(op.src.col) + ") + " + k : "(" + ex(op.src.col) + ") + " + col0(d) + " + " + l;
      return to_f32(s.dtype, at(op.src, r, c));
    };
    // Lanes holding the other positions along the axis: `stride` apart, G of them.
    const int64_t stride = rows ? 1 : p_.worker_cols;
    int64_t G = 1;
    auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
    if (pow2(S) && pow2(stride) && stride < 32 && threads_ % 32 == 0 &&
        p_.workers == p_.worker_rows * p_.worker_cols)
      G = std::min<int64_t>(S, 32 / stride);
    line("#pragma unroll");
    open("for (int l = 0; l < " + num(lines) + "; ++l)");
    if (G == 1) {
      line("float a = " + partial("l", "0") + ";");
      line("#pragma unroll");
      line("for (int k = 1; k < " + num(S) + "; ++k) a = " + reduce_step(op.reduce, "a", partial("l", "k")) + ";");
    } else {
      std::string pos = rows ? "wc" : "wr";
      line("const int k0 = " + pos + " % " + num(G) + ";");
      line("float a = " + partial("l", "k0") + ";");
      line("#pragma unroll");
      line("for (int k = " + num(G) + "; k < " + num(S) + "; k += " + num(G) + ") a = " +
           reduce_step(op.reduce, "a", partial("l", "k0 + k")) + ";");
      for (int64_t m = G / 2; m >= 1; m /= 2)
        line("a = " + reduce_step(op.reduce, "a", "__shfl_xor_sync(0xffffffffu, a, " + num(m * stride) + ")") + ";");
    }
    line("f" + num(d.id) + "[l] = a;");
    close();
  }


  // ---- mma ----

  void emit_mma(const GroupOp& op) {
    const Buffer& acc = frag(op.frag, op);
    const Buffer& A = p_.buffer(op.a.buffer);
    const Buffer& B = p_.buffer(op.b.buffer);
    // An a operand in registers (a private fragment, group_ir.h) takes b's dtype.
    const bool a_regs = A.space == Space::Private;
    if ((A.space != Space::Shared && !a_regs) || B.space != Space::Shared)
      user_error(ErrorKind::Verify, "mma #" + num(op.id) + ": operands must be in shared memory (a may be a fragment)");
    if (a_regs && (p_.atom != AtomKind::MmaSync || B.dtype == DType::F32))
      user_error(ErrorKind::Unsupported, "mma #" + num(op.id) + ": an a operand in registers (" + A.name +
                                             ") needs the mma.sync atom and 16-bit b, not " + atom_name(p_.atom) +
                                             " and " + dtype_name(B.dtype));
    if (!a_regs && A.dtype != B.dtype)
      user_error(ErrorKind::Unsupported, "mma #" + num(op.id) + ": operands of different dtypes");
    int64_t pr = acc.rows / p_.worker_rows, pc = acc.cols / p_.worker_cols;
    if (acc.rows != op.m || acc.cols != op.n)
      user_error(ErrorKind::Verify, "mma #" + num(op.id) + ": accumulator is not m x n");
    line("// mma #" + num(op.id) + " (" + num(op.m) + "x" + num(op.n) + "x" + num(op.k) + ", " +
         atom_name(p_.atom) + ")");
    open("if (owns)");
    line("const int ar = (int)(" + ex(op.a.row) + ") + wr * " + num(pr) + ";");
    line("const int bc = (int)(" + ex(op.b.col) + ") + wc * " + num(pc) + ";");
    line("const int ak = (int)(" + ex(op.a.col) + "), bk = (int)(" + ex(op.b.row) + ");");
    if (p_.atom == AtomKind::Fma) emit_fma_mma(op, acc, A, B, pr, pc);
    else if (p_.atom == AtomKind::Wgmma) emit_wgmma(op, acc, A, B, pr, pc);
    else emit_sync_mma(op, acc, A, B, pr, pc);
    close();
  }

  // Each thread: pr x pc outer products per k, from registers. Rows of A are read
  // 4 (or 2) k at a time as float4 (float2) where contiguous; B's row segment as
  // float4s. With frag_buffers 2 the fragments of step kk + kv are loaded before
  // step kk's FMAs.
  void emit_fma_mma(const GroupOp& op, const Buffer& acc, const Buffer& A, const Buffer& B,
                    int64_t pr, int64_t pc) {
    if (A.dtype != DType::F32)
      user_error(ErrorKind::Unsupported, "mma #" + num(op.id) + ": the fma atom takes f32 operands, got " +
                                             dtype_name(A.dtype) + " (plan the mma.sync atom)");
    bool a_vec = A.layout == Layout::RowMajor && line_[A.id] % 4 == 0 && op.k % 4 == 0 &&
                 const_multiple(op.a.col, 4);
    const bool twice = p_.frag_buffers == 2;
    bool b_vec = columns_contiguous(B, 4) && pc % 4 == 0 && const_multiple(op.b.col, 4);
    // Under the two-block bound (64 accumulators, one register set: min_blocks) A is
    // read 2 k at a time: 16 registers, not 4 steps' 32, leave ptxas room for the
    // loop's copy state (H200 fp32, 128x128x32 tiles: 0.736 -> 0.774x cuBLAS at 4096^3,
    // 0.748 -> 0.789 at 8192^3; 1 k at a time 0.727). Blocks of 128 threads keep 255
    // registers and read 4 k (H100, 128x64 tiles of 8x8 parts: 0.62 -> 0.77 at 4096^3).
    const bool two_block_bound = !twice && pr * pc == 64 && !registers_to_spare();
    int64_t kv = a_vec ? (two_block_bound ? 2 : 4) : 1;
    const std::string f = "f" + num(acc.id);
    // A read of `lanes` floats at (r, c) of A or B, through 32-bit window addresses
    // (tsl_lds*) where a thread holds 32 to 64 accumulators. Under the two-block bound
    // the 128x128 kernel spilled 48 bytes with generic pointers and none with these,
    // 3-4% faster on an H100 (3000x2000x1500 0.872 -> 0.905x cuBLAS). The default
    // 128x64 tiles (8x4 a thread) gained 1-4% (an H100: 4096^3 0.847 -> 0.860-0.866,
    // 1000^3 0.808 -> 0.836, 1200x800x700 0.858 -> 0.897; docs/results/
    // cuda-2026-12-07-session64). Elsewhere they were no faster. With 16 (32x32 and
    // 64x64 tiles) the same session measured 250x130x250 -6%, 127x193x61 -5 to -10%,
    // 16x4096x4096 -2%, 64^3 +5%, 512^3 within noise. With 128 (256x128 tiles, 255
    // registers): 8192^3 +1.2%, 7000x3000x2000 +3.4%, but 2048^3 -1.3%, 1500x2500x700
    // -3.6% (docs/results/cuda-2026-12-06-session52). Those read through generic
    // pointers.
    const bool window_reads = pr * pc >= 32 && pr * pc <= 64;
    const auto read = [&](const BufferRef& ref, const std::string& r, const std::string& c, int64_t lanes) {
      if (window_reads) return "tsl_lds" + num(lanes) + "(" + shared_addr(ref, r, c, true) + ")";
      const std::string at = base(ref) + "[" + index(ref, r, c) + "]";
      return lanes == 1 ? at : "*(const float" + num(lanes) + "*)&" + at;
    };
    // With one register set, B's row of step q is loaded just before its FMAs
    // (pc registers, not kv * pc): 64 accumulators, A's 4 steps and one B row fit
    // the 128 registers of two blocks a multiprocessor (see min_blocks).
    const bool stream_b = !twice;
    // B's row k0 + q into rb[set][slot].
    auto load_b = [&](const std::string& set, const std::string& k0, const std::string& q, const std::string& slot) {
      if (b_vec) {
        line("#pragma unroll");
        open("for (int c = 0; c < " + num(pc) + "; c += 4)");
        line("const float4 v = " + read(op.b, "bk + " + k0 + " + " + q, "bc + c", 4) + ";");
        line("rb[" + set + "][" + slot + "][c] = v.x; rb[" + set + "][" + slot + "][c + 1] = v.y; rb[" + set + "][" +
             slot + "][c + 2] = v.z; rb[" + set + "][" + slot + "][c + 3] = v.w;");
        close();
      } else {
        line("#pragma unroll");
        line("for (int c = 0; c < " + num(pc) + "; ++c) rb[" + set + "][" + slot +
             "][c] = " + read(op.b, "bk + " + k0 + " + " + q, "bc + c", 1) + ";");
      }
    };
    // Fragments of step `k0` into register set `set`.
    auto load = [&](const std::string& set, const std::string& k0) {
      line("#pragma unroll");
      open("for (int r = 0; r < " + num(pr) + "; ++r)");
      if (a_vec) {
        if (kv == 4) {
          line("const float4 v = " + read(op.a, "ar + r", "ak + " + k0, 4) + ";");
          line("ra[" + set + "][r][0] = v.x; ra[" + set + "][r][1] = v.y; ra[" + set + "][r][2] = v.z; ra[" + set +
               "][r][3] = v.w;");
        } else {
          line("const float2 v = " + read(op.a, "ar + r", "ak + " + k0, 2) + ";");
          line("ra[" + set + "][r][0] = v.x; ra[" + set + "][r][1] = v.y;");
        }
      } else {
        line("ra[" + set + "][r][0] = " + read(op.a, "ar + r", "ak + " + k0, 1) + ";");
      }
      close();
      if (stream_b) return;
      line("#pragma unroll");
      open("for (int q = 0; q < " + num(kv) + "; ++q)");
      load_b(set, k0, "q", "q");
      close();
    };
    std::string regs = "float ra[" + num(twice ? 2 : 1) + "][" + num(pr) + "][" + num(kv) + "], rb[" +
                       num(twice ? 2 : 1) + "][" + num(stream_b ? 1 : kv) + "][" + num(pc) + "];";
    if (twice) {
      line(regs);
      load("0", "0");
    }
    line("#pragma unroll");
    open("for (int kk = 0; kk < " + num(op.k) + "; kk += " + num(kv) + ")");
    std::string cur = "0";
    if (twice) {
      line("const int cur = (kk / " + num(kv) + ") % 2;");
      open("if (kk + " + num(kv) + " < " + num(op.k) + ")");
      load("cur ^ 1", "kk + " + num(kv));
      close();
      cur = "cur";
    } else {
      line(regs);
      load("0", "kk");
    }
    line("#pragma unroll");
    open("for (int q = 0; q < " + num(kv) + "; ++q)");
    if (stream_b) load_b(cur, "kk", "q", "0");
    const std::string b_row = stream_b ? "0" : "q";
    line("#pragma unroll");
    open("for (int r = 0; r < " + num(pr) + "; ++r)");
    line("#pragma unroll");
    line("for (int c = 0; c < " + num(pc) + "; ++c) " + f + "[r * " + num(pc) + " + c] = fmaf(ra[" + cur +
         "][r][q], rb[" + cur + "][" + b_row + "][c], " + f + "[r * " + num(pc) + " + c]);");
    close();
    close();
    close();
  }

  // Each warp: a (pr/16) x (pc/8) grid of mma.sync tiles. 16-bit operands come
  // through ldmatrix where rows of 8 elements are contiguous and 16-byte aligned;
  // tf32 operands (and other layouts) are gathered element by element. With
  // frag_buffers 2, A's fragments for step kk + ka are loaded before step kk's
  // mmas; B's are streamed either way (each n pair loaded just before its mmas).
  void emit_sync_mma(const GroupOp& op, const Buffer& acc, const Buffer& A, const Buffer& B,
                     int64_t pr, int64_t pc) {
    const DType dt = B.dtype;  // A's too, or that of the registers A is read from
    const bool half = dt != DType::F32;
    const int64_t ka = half ? 16 : 8, mt = pr / 16, nt = pc / 8;
    if (op.k % ka != 0)
      user_error(ErrorKind::Plan, "mma #" + num(op.id) + ": k = " + num(op.k) + " is not a multiple of the atom's " + num(ka));
    bool a_ldm = half && A.layout == Layout::RowMajor && line_[A.id] % 8 == 0 && const_multiple(op.a.col, 8);
    bool b_ldm = half && nt % 2 == 0 && const_multiple(op.b.row, 8) &&
                 ((B.layout == Layout::ColPanels && B.panel == 8) ||
                  (B.layout == Layout::RowMajor && line_[B.id] % 8 == 0));
    // Row panels of 8 (a transposed source, lower.cpp) hold each column's 8 k
    // values contiguously: ldmatrix without .trans gives the b fragments.
    bool b_ldm_rows = half && nt % 2 == 0 && const_multiple(op.b.row, 8) && B.layout == Layout::RowPanels &&
                      B.panel == 8 && line_[B.id] % 8 == 0;
    std::string fa = base(op.a), fb = base(op.b), f = "f" + num(acc.id);
    std::string mma = dt == DType::BF16 ? "tsl_mma_bf16" : dt == DType::F16 ? "tsl_mma_f16" : "tsl_mma_tf32";
    const bool twice = p_.frag_buffers == 2;
    // A's fragments of step `k0` into register set `set`.
    auto load_a = [&](const std::string& set, const std::string& k0) {
      line("#pragma unroll");
      open("for (int m = 0; m < " + num(mt) + "; ++m)");
      std::string ra = "ra[" + set + "][m]";
      if (A.space == Space::Private) {
        // From registers (the m16n8 accumulator layout of two adjacent 8-column tiles
        // holds, per lane, what the m16n8k16 a operand needs of one 16-wide k step):
        // a[j] of k step k0 is tile (m, k0/8 + j/2) of the fragment, its registers
        // 2(j%2) and 2(j%2) + 1 (row lane/4 + 8(j%2), columns 2(lane%4) + {0, 1}).
        const std::string f = "f" + num(A.id), nf = num(A.cols / p_.worker_cols / 8);
        line("#pragma unroll");
        open("for (int j = 0; j < 4; ++j)");
        line("const int x = (m * " + nf + " + (" + k0 + ") / 8 + j / 2) * 4 + (j % 2) * 2;");
        line(ra + "[j] = " + (dt == DType::BF16 ? "tsl_pack_bf16x2(" : "tsl_pack_f16x2(") + f + "[x], " + f + "[x + 1]);");
        close();
      } else if (a_ldm) {
        line("tsl_ldmatrix_x4(" + ra + ", a_s + " + shared_step(A, "m * 16", k0) + ");");
      } else {
        // a[j]: row lane/4 + 8*(j%2); k (tf32) lane%4 + 4*(j/2), (16-bit) pair 2*(lane%4) + 8*(j/2).
        line("#pragma unroll");
        open("for (int j = 0; j < 4; ++j)");
        line("const int r = ar + m * 16 + lane / 4 + (j % 2) * 8;");
        if (half) {
          line("const int k = ak + " + k0 + " + (lane % 4) * 2 + (j / 2) * 8;");
          line(ra + "[j] = tsl_pack16(" + fa + "[" + index(A, "r", "k") + "], " + fa + "[" + index(A, "r", "k + 1") + "]);");
        } else {
          line(ra + "[j] = tsl_tf32(" + fa + "[" + index(A, "r", "ak + " + k0 + " + lane % 4 + (j / 2) * 4") + "]);");
        }
        close();
      }
      close();
    };
    // Lane l's ldmatrix row of the first step; steps add constants (shared_step).
    if (a_ldm && A.space != Space::Private)
      line("const unsigned a_s = " + shared_addr(op.a, "ar + lane % 16", "ak + lane / 16 * 8") + ";");
    if (b_ldm_rows)
      line("const unsigned b_s = " + shared_addr(op.b, "bk + lane / 8 % 2 * 8", "bc + lane / 16 * 8 + lane % 8") + ";");
    else if (b_ldm)
      line("const unsigned b_s = " + shared_addr(op.b, "bk + lane % 16", "bc + lane / 16 * 8") + ";");
    std::string regs = "unsigned ra[" + num(twice ? 2 : 1) + "][" + num(mt) + "][4];";
    if (twice) {
      line(regs);
      load_a("0", "0");
    }
    line("#pragma unroll");
    open("for (int kk = 0; kk < " + num(op.k) + "; kk += " + num(ka) + ")");
    std::string cur = "0";
    if (twice) {
      line("const int cur = (kk / " + num(ka) + ") % 2;");
      open("if (kk + " + num(ka) + " < " + num(op.k) + ")");
      load_a("cur ^ 1", "kk + " + num(ka));
      close();
      cur = "cur";
    } else {
      line(regs);
      load_a("0", "kk");
    }
    // B fragments are streamed: each n (pair) is loaded and used by every m before
    // the next, so only A's fragments and one B pair are live beside the accumulator.
    std::string acc_at = "&" + f + "[(m * " + num(nt) + " + n) * 4]", ra_m = "ra[" + cur + "][m]";
    if (b_ldm || b_ldm_rows) {
      line("#pragma unroll");
      open("for (int n = 0; n < " + num(nt) + "; n += 2)");
      line("unsigned t[4];");
      // Lane l addresses row l % 8 of matrix l / 8: (k half, n tile) = (l / 8 % 2, l / 16).
      line(std::string(b_ldm_rows ? "tsl_ldmatrix_x4" : "tsl_ldmatrix_x4_trans") + "(t, b_s + " +
           shared_step(B, "kk", "n * 8") + ");");
      line("const unsigned b0[2] = {t[0], t[1]}, b1[2] = {t[2], t[3]};");
      line("#pragma unroll");
      line("for (int m = 0; m < " + num(mt) + "; ++m) { " + mma + "(" + acc_at + ", " + ra_m + ", b0); " + mma + "(&" + f +
           "[(m * " + num(nt) + " + n + 1) * 4], " + ra_m + ", b1); }");
      close();
    } else {
      // b[j]: column lane/4; k (tf32) lane%4 + 4*j, (16-bit) pair 2*(lane%4) + 8*j.
      line("#pragma unroll");
      open("for (int n = 0; n < " + num(nt) + "; ++n)");
      line("unsigned rb[2];");
      line("#pragma unroll");
      open("for (int j = 0; j < 2; ++j)");
      line("const int c = bc + n * 8 + lane / 4;");
      if (half) {
        line("const int k = bk + kk + (lane % 4) * 2 + j * 8;");
        line("rb[j] = tsl_pack16(" + fb + "[" + index(B, "k", "c") + "], " + fb + "[" + index(B, "k + 1", "c") + "]);");
      } else {
        line("rb[j] = tsl_tf32(" + fb + "[" + index(B, "bk + kk + lane % 4 + j * 4", "c") + "]);");
      }
      close();
      line("#pragma unroll");
      line("for (int m = 0; m < " + num(mt) + "; ++m) " + mma + "(" + acc_at + ", " + ra_m + ", rb);");
      close();
    }
    close();
  }

  // Each warpgroup: pr/64 wgmma tiles of 64 x pc per k step (16 of k, tf32 8),
  // operands straight from the swizzled shared buffers (descriptors; see
  // mark_wgmma_operands). The accumulators are fenced before the first wgmma and
  // waited for at the end, so the op is synchronous to everything around it.
  void emit_wgmma(const GroupOp& op, const Buffer& acc, const Buffer& A, const Buffer& B, int64_t pr, int64_t pc) {
    const std::string f = "f" + num(acc.id);
    const bool k_major = B.layout == Layout::RowPanels;
    const std::string fn = wgmma_name({A.dtype, pc});
    const int64_t bytes = dtype_bytes(A.dtype);
    // A: rows 64 apart are 64 * 128 bytes apart; a k step moves 32 bytes along the
    // swizzled row. B MN-major: a k step of 16 rows moves 16 * 128 bytes; panels are
    // rows * 128 bytes apart (LBO), 8-row groups 1024 bytes (SBO). B K-major: like A,
    // one 128-byte line a column, 8-line groups 1024 bytes apart.
    // The descriptors are built once; each step adds its byte offset / 16 to the
    // address field (bits 0-13). A shared address is below 2^18 bytes, so that sum
    // never carries out of the field, and the loop is 64-bit adds of constants
    // instead of a mask, a shift and an or per descriptor.
    line("const unsigned sa = tsl_smem(&" + base(op.a) + "[" + index(A, "ar", "0") + "]) + ak * " + num(bytes) + ";");
    line("const unsigned sb = tsl_smem(&" + base(op.b) + "[" + index(B, "bk", "bc") + "]);");
    line("const unsigned long long da0 = tsl_wgmma_desc(sa, 16, 1024);");
    line("const unsigned long long db0 = tsl_wgmma_desc(sb, " + std::string(k_major ? "16" : num(B.rows * 128)) +
         ", 1024);");
    line("asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");");
    line("#pragma unroll");
    open("for (int kk = 0; kk < " + num(op.k / wgmma_k(A.dtype)) + "; ++kk)");
    line("const unsigned long long db = db0 + (unsigned long long)(kk * " + std::string(k_major ? "32" : "2048") +
         " / 16);");
    line("#pragma unroll");
    line("for (int m = 0; m < " + num(pr / 64) + "; ++m) " + fn + "(&" + f + "[m * " + num(pc / 2) +
         "], da0 + (unsigned long long)((m * 8192 + kk * 32) / 16), db);");
    close();
    line("asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");");
    // A synchronous mma completes here; an async one at its mma.wait.
    if (!op.async) line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");");
  }


  const GroupProgram& p_;
  const bool folded_grid_;
  const bool assume_aligned_;
  mutable std::set<int> aligned_tensors_;                 // what the aligned variant assumed (base_aligned)
  mutable std::map<std::string, int64_t> aligned_sizes_;  // size parameter -> its assumed multiple
  std::vector<bool> swizzled_;  // shared buffers in the wgmma operand layout
  bool swizzled_any_ = false;
  int64_t stage_offset_ = 0, stage_cols_ = 0;  // staged stores: scratch offset, columns (0: none)
  // How fragments are named (frag_reg): their register arrays; in a staged loop one
  // scalar each for the element at hand; in a local loop the thread's local copies.
  enum class FragForm { Registers, Scalar, Local } frag_form_ = FragForm::Registers;
  std::set<int> async_accumulators_;  // fragments async wgmmas accumulate into
  std::set<int> redundant_fences_;       // fence op ids left out (find_redundant_fences)
  std::set<WgmmaShape> wgmma_shapes_;  // the wgmma instructions the program uses
  std::vector<int64_t> offset_, slot_, line_;
  std::vector<int64_t> mbar_offset_;     // by mbarrier id: its slots' byte offset in smem
  int64_t ticket_offset_ = 0;            // tickets: the shared word of the drawn ticket
  int role_threads_ = 0;                 // inside a role: its threads (0: the whole block runs)
  static constexpr int kTicketBarrier = 15;  // the named barrier of a role's ticket (the last of 16)
  std::vector<CudaTensorMap> maps_;      // tensor map parameters, in order
  std::map<int, DType> rounded_by_pack_;  // fragment -> the 16-bit dtype every read of it packs to
  // Kernel-wide index values (ex): name and C++ text, declared after the coordinates.
  mutable std::vector<std::pair<std::string, std::string>> hoisted_;
  mutable int hoisted_count_ = 0, loop_count_ = 0;
  // The loops being emitted, outermost first: each one's variable, where its body
  // starts in body_, and the definitions hoisted to the top of its body.
  struct LoopScope {
    std::string iv;
    size_t at;
    std::vector<std::pair<std::string, std::string>> defs;
  };
  mutable std::vector<LoopScope> loops_;
  std::map<int, int> tma_map_;           // tma op id -> its map
  int leader_worker_ = 0;                // the first worker of the workers running (in a role: its first)
  bool in_leader_block_ = false;         // emitting a block only the leader thread runs
  std::set<int> leader_arrived_;         // mbarriers some leader arrival names
  std::set<int> leader_thread_arrivals_;  // leader arrivals the leader thread makes alone (op ids)
  // Arrivals per worker arrival on mbarrier `id`: one per warp of a warpgroup
  // worker where only whole workers arrive on it.
  int64_t warp_arrivals(int id) const {
    return p_.lanes == 128 && !leader_arrived_.count(id) ? p_.lanes / 32 : 1;
  }
  // Workers of one thread (the fma atom) arrive once per warp on an mbarrier that
  // every worker arrives on (no roles split a warp, no leader's arrival, counts of
  // whole warps): 32 times fewer arrivals on one shared word (the stage releases of
  // a tma pipeline, 256 a stage at 256 workers).
  void mark_warp_releases() {
    if (p_.lanes != 1 || has_roles_ || p_.cluster > 1 || p_.workers % 32 != 0) return;
    for (const auto& [id, counts] : init_counts_) {
      bool whole = !leader_arrived_.count(id);
      for (int64_t c : counts) whole = whole && c == p_.workers;
      if (whole) warp_released_.insert(id);
    }
  }
  std::map<int, std::vector<int64_t>> init_counts_;  // mbarrier id -> the counts its inits give
  std::set<int> warp_released_;                      // mbarriers arrived on once per warp
  bool has_roles_ = false;
  bool has_setmaxnreg_ = false;          // some role asks for registers (sm_90a)
  int64_t shared_bytes_ = 0;
  int threads_ = 0;
  std::string body_;
  int depth_ = 1;
};

}  // namespace

CudaSource emit_cuda(const GroupProgram& program, bool folded_grid, bool assume_aligned) {
  CudaSource s = Emitter(program, folded_grid, assume_aligned).run();
  s.folded_grid = folded_grid && program.grid.size() > 1;
  s.assume_aligned = assume_aligned;
  return s;
}

std::string cuda_compile_arch(const CudaSource& source, const std::string& arch) {
  if (!source.sm90a) return arch;
  if (arch == "sm_90" || arch == "sm_90a") return "sm_90a";
  user_error(ErrorKind::Plan, "the wgmma atom needs sm_90 (compiled for sm_90a); the target is " + arch +
                                  " (plan the mma.sync atom)");
}

CudaGrid cuda_grid(const GroupProgram& program, const SymbolLookup& lookup) {
  CudaGrid g;
  int64_t* dims[] = {&g.x, &g.y, &g.z};
  size_t n = program.grid.size();
  for (size_t i = 0; i < n && i < 3; ++i) *dims[n - 1 - i] = expr_eval(program.grid[i].extent, lookup);
  if (g.x <= 0 || g.y <= 0 || g.z <= 0) return g;  // an empty grid runs nothing
  if (g.y > 65535 || g.z > 65535) {
    // The device takes at most 65535 blocks along y and z: fold the grid into x.
    if (g.x > INT64_MAX / g.y || g.x * g.y > INT64_MAX / g.z || g.x * g.y * g.z > 2147483647)
      user_error(ErrorKind::InvalidArgument, "cuda grid " + std::to_string(g.x) + " x " + std::to_string(g.y) +
                                                 " x " + std::to_string(g.z) +
                                                 " blocks: y or z exceeds 65535 and the whole grid (folded into x) "
                                                 "exceeds 2^31-1 blocks");
    g.x *= g.y * g.z;
    g.y = g.z = 1;
    g.folded = true;
  }
  if (g.x > 2147483647)
    user_error(ErrorKind::InvalidArgument, "cuda grid " + std::to_string(g.x) + " x " + std::to_string(g.y) + " x " +
                                               std::to_string(g.z) + " blocks: x exceeds 2^31-1");
  return g;
}

}  // namespace tessel
