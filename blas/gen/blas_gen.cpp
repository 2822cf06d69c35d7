// tessel_blas_gen OUTDIR: the build-time half of libtessel_blas.so (docs/blas.md).
//
// For every kernel the BLAS library ships (a dtype, the operand layouts, a plan) it
// captures GEMM in the DSL, compiles it with tessel's own compiler (TileIR ->
// GroupIR, compiler/compile.h) and emits the cpu target's C++ for every vector ISA
// (target/cpu/cpu_emit.h). Nothing is compiled here: CMake compiles what this writes
// into the library, so the library needs no compiler and no cache at run time.
//
// It writes into OUTDIR:
//   blas_kernels_<isa>.cpp  every kernel's unit for that ISA, each in a namespace of
//                           its own, its four entry points renamed (tsl_blas_<isa>_<i>_*)
//   blas_flags_<isa>.rsp    the ISA's compiler flags (cpu_isa.h), read by g++ as @file
//   blas_table.inc          the kernel table the runtime dispatches over (blas_kernels.h)
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "blas_kernel.h"
#include "bench/shape.h"
#include "compiler/compile.h"
#include "ir/expr.h"
#include "ops/gemm.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// The plans shipped, for both dtypes: what the cpu planner (default_gemm_plan) chooses
// for the seed report's eight shapes (bench/shape.h), also with M and N swapped (a
// column-major call reaches the row-major kernel as N x M), and for 4096^3, each once.
// The runtime picks among them per call (blas_gemm.cpp, choose).
std::vector<Plan> shipped_plans() {
  std::vector<bench::Shape> shapes = bench::seed_shapes();
  shapes.push_back({4096, 4096, 4096});
  std::vector<Plan> plans;
  for (const bench::Shape& s : shapes)
    for (Plan p : {default_gemm_plan(TargetKind::Cpu, s.m, s.n, s.k), default_gemm_plan(TargetKind::Cpu, s.n, s.m, s.k)}) {
      // A shipped kernel serves every shape near its own, where an exact tile (one
      // shape's M or N) or operands read in place (tiles inside the tensors) would run
      // the scalar edge loops: M and N tiles round up to the register block, and A
      // and B are packed; and no size is fixed.
      p.direct = false;
      p.sizes.clear();
      p.tiles["BM"] = (p.tile("BM") + p.atom_m - 1) / p.atom_m * p.atom_m;
      p.tiles["BN"] = (p.tile("BN") + p.atom_n - 1) / p.atom_n * p.atom_n;
      if (std::find(plans.begin(), plans.end(), p) == plans.end()) plans.push_back(p);
    }
  return plans;
}

constexpr const char* kCanonicalSizes[] = {"M", "N", "K", "lda", "ldb", "ldc"};
constexpr const char* kCanonicalTensors[] = {"A", "B", "C"};
constexpr const char* kCanonicalScalars[] = {"alpha", "beta"};

template <size_t N>
int index_of(const char* const (&names)[N], const std::string& name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<int>(i);
  user_error(ErrorKind::Unsupported, "tessel_blas_gen: the program names '" + name + "', which the BLAS table does not know");
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

struct Emitted {
  DType dt;
  bool ta, tb;
  Plan plan;
  GroupProgram program;
};

std::string list(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "{" + s + "}";
}

int run(const std::string& out) {
  std::vector<Emitted> kernels;
  for (DType dt : {DType::F32, DType::F64})
    for (int t = 0; t < 4; ++t)
      for (const Plan& plan : shipped_plans()) {
        bool ta = t & 2, tb = t & 1;
        CompiledGroup g = compile_to_group(blas_gemm_kernel(dt, ta, tb), plan, CompileOptions{});
        kernels.push_back({dt, ta, tb, plan, std::move(g.program)});
      }

  const CpuIsa isas[] = {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Sse};
  std::ostringstream table;
  table << "// Written by tessel_blas_gen (blas/gen/blas_gen.cpp); do not edit.\n";
  for (CpuIsa isa : isas) {
    const CpuIsaInfo& info = cpu_isa_info(isa);
    std::ostringstream unit;
    unit << "// Written by tessel_blas_gen (blas/gen/blas_gen.cpp) for " << info.name
         << ": the cpu target's units, one namespace each; do not edit.\n";
    for (size_t i = 0; i < kernels.size(); ++i) {
      std::string prefix = std::string("tsl_blas_") + info.name + "_" + std::to_string(i);
      unit << "\n// " << kernels[i].program.name << " " << dtype_name(kernels[i].dt) << " "
           << kernels[i].plan.to_string() << "\n";
      unit << "#define tessel_group " << prefix << "_group\n#define tessel_scratch_floats " << prefix
           << "_scratch_floats\n#define tessel_bind " << prefix << "_bind\n#define tessel_grid " << prefix << "_grid\n";
      unit << "namespace " << prefix << " {\n" << emit_cpu(kernels[i].program, isa) << "\n}  // namespace " << prefix
           << "\n#undef tessel_group\n#undef tessel_scratch_floats\n#undef tessel_bind\n#undef tessel_grid\n";
      table << "extern \"C\" void " << prefix << "_group(const int64_t*, const double*, float* const*, "
            << "const int64_t*, float*);\nextern \"C\" int64_t " << prefix << "_scratch_floats(void);\n"
            << "extern \"C\" void " << prefix << "_bind(void* const*);\n";
    }
    std::string flags = std::string(info.flags) + " -O2 -ffp-contract=fast -fno-math-errno\n";
    if (!write_file(out + "/blas_kernels_" + info.name + ".cpp", unit.str()) ||
        !write_file(out + "/blas_flags_" + info.name + ".rsp", flags)) {
      std::cerr << "tessel_blas_gen: cannot write into " << out << "\n";
      return 1;
    }
  }
  // The table: per kernel, where its program's parameters come from in the
  // canonical order (kCanonical*), and its grid as a function of the sizes.
  for (size_t i = 0; i < kernels.size(); ++i) {
    const GroupProgram& p = kernels[i].program;
    table << "static void tsl_blas_grid_" << i << "(const int64_t* s, int64_t* g) {\n";
    if (p.grid.size() != 2) user_error(ErrorKind::Unsupported, "tessel_blas_gen: a GEMM grid of " + std::to_string(p.grid.size()) + " dimensions");
    for (size_t d = 0; d < p.grid.size(); ++d)
      table << "  g[" << d << "] = "
            << expr_to_cpp(p.grid[d].extent,
                           [](const std::string& n) { return "s[" + std::to_string(index_of(kCanonicalSizes, n)) + "]"; })
            << ";\n";
    table << "}\n";
  }
  for (CpuIsa isa : isas) {
    const CpuIsaInfo& info = cpu_isa_info(isa);
    table << "static const BlasKernel tsl_blas_kernels_" << info.name << "[] = {\n";
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Emitted& e = kernels[i];
      const GroupProgram& p = e.program;
      std::vector<int> sizes, tensors, scalars;
      for (const std::string& s : p.size_params) sizes.push_back(index_of(kCanonicalSizes, s));
      for (const TensorParam& t : p.tensors) tensors.push_back(index_of(kCanonicalTensors, t.name));
      for (const ScalarParam& s : p.scalars) scalars.push_back(index_of(kCanonicalScalars, s.name));
      if (sizes.size() > 8 || tensors.size() > 3 || scalars.size() > 2)
        user_error(ErrorKind::Unsupported, "tessel_blas_gen: more parameters than the table holds");
      std::string prefix = std::string("tsl_blas_") + info.name + "_" + std::to_string(i);
      table << "  {" << (e.dt == DType::F64 ? 1 : 0) << ", " << e.ta << ", " << e.tb << ", " << e.plan.tile("BM")
            << ", " << e.plan.tile("BN") << ", " << e.plan.tile("BK") << ", " << sizes.size() << ", "
            << list(sizes) << ", " << tensors.size() << ", " << list(tensors) << ", " << scalars.size() << ", "
            << list(scalars) << ", " << prefix << "_group, " << prefix << "_scratch_floats, " << prefix
            << "_bind, tsl_blas_grid_" << i << "},  // " << p.name << " " << e.plan.to_string() << "\n";
    }
    table << "};\n";
  }
  table << "static const BlasKernelSet tsl_blas_kernel_sets[] = {\n";
  for (CpuIsa isa : isas) {
    const CpuIsaInfo& info = cpu_isa_info(isa);
    table << "  {\"" << info.name << "\", tsl_blas_kernels_" << info.name << ", " << kernels.size() << "},\n";
  }
  table << "};\n";
  if (!write_file(out + "/blas_table.inc", table.str())) {
    std::cerr << "tessel_blas_gen: cannot write into " << out << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tessel_blas_gen OUTDIR\n";
    return 2;
  }
  try {
    return tessel::run(argv[1]);
  } catch (const tessel::Error& e) {
    std::cerr << "tessel_blas_gen: " << e.what() << "\n";
    return 1;
  }
}
