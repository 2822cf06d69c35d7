// The `cpu` emitter: GroupIR -> header-free C++ (GCC vector extensions for SIMD; no
// #include, so it compiles in tens of milliseconds): one translation unit, or two
// (kCpuSecondUnit below).
//
// Entry points of the emitted unit:
//   extern "C" void tessel_group(const int64_t* sizes, const double* scalars,
//                                float* const* tensors, const int64_t* group,
//                                float* scratch);
//   extern "C" int64_t tessel_scratch_floats(void);
//   extern "C" void tessel_bind(void* const* table);   // cpu_support.h, once after dlopen
//   extern "C" int tessel_grid(const int64_t* sizes, int64_t* extents);
// and, in a unit of tiny kernels whose T tensors and S scalars fit the registers
// (T <= 3, S <= 8), tessel_group with them as arguments (cpu_jit.h, CpuGroupRegsFn):
//   extern "C" void tessel_group_tTsS(const int64_t* sizes, const int64_t* group,
//                                     float* scratch, float* tsl_t0, ..., double tsl_s0, ...);
// `sizes` follows GroupProgram::size_params, `scalars` GroupProgram::scalars,
// `tensors` GroupProgram::tensors, `group` the coordinates of GroupProgram::grid.
// tessel_grid writes GroupProgram::grid's extents for `sizes` and returns how many
// there are, so that a launcher needs the unit and the parameters, not the GroupIR.
// `scratch` holds every shared buffer (all versions) and every worker's fragments
// (f64 buffers take two floats an element): one group runs on one thread, which
// runs the workers' parts of each barrier interval one after another, so a fence
// needs no instruction. With several workers, each op over fragments loops over
// them at run time (their parts have equal extents), so the unit's size does not
// grow with the worker count. The CPU
// has no copy engine: async copies complete when issued, and async.commit /
// async.wait emit nothing. Opaque calls are rejected (ErrorKind::Unsupported).
//
// Tensors are passed as float* and hold their storage type: f32, f64, or the bits
// of bf16 / f16, converted to and from fp32 (round to nearest even) by bit
// manipulation in the unit. Shared buffers and fragments hold float (double for
// f64); a 16-bit shared buffer holds values rounded to its precision. A global
// window is addressed through its ref's offset and strides: a column stride of
// constant 1 keeps the contiguous paths (row memcpy, or panel-wide runs when
// packing ColPanels), any other stride an element loop. A window wholly in bounds
// takes the unguarded path; an edge window a guarded one whose source elements
// outside read as the op's padding. Elementwise operands broadcast (extent 1
// stretches); exp and exp2 in fp32 are the unit's own branch-free versions (they
// vectorize), other math goes through __builtin_*; max and min propagate NaN as
// the sim does. Reductions run in independent lanes so that they vectorize. Mma
// uses the micro-kernel of cpu_microkernel.h where the layouts allow it (A
// row-major, B in column panels of the atom's width, a multiple of the vector
// width), with edge kernels for a fragment part's leftover rows and columns, and a
// scalar loop otherwise.
//
// The unit is written for one vector ISA (cpu_isa.h): its vector types (tsl_vf) are
// that ISA's registers, and the micro-kernel blocks for their count.
#pragma once
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "target/cpu/cpu_isa.h"

namespace tessel {
// The line that starts a second unit. A unit with homes' bodies (the leaves that run
// tiny kernels, cpu_tiny_kernel.h) has two: the first holds the entry points, the
// tiny kernels and the leaves; the second the general body (tsl_group_general) and
// the bind of its own copies of the table's pointers (tsl_bind_general), hidden
// symbols that the first calls. The JIT compiles both at once, a compiler each, and
// links them into one object: GCC's cost is per function, so on two cores a cold
// compile takes a fifth less (docs/cpu_microkernel.md, the seventieth session).
extern const char kCpuSecondUnit[];
// The units of emit_cpu's source, in order (one, or two as above).
std::vector<std::string> split_cpu_units(const std::string& source);

std::string emit_cpu(const GroupProgram& program, CpuIsa isa);
// For the ISA the JIT would use now (cpu_isa()).
std::string emit_cpu(const GroupProgram& program);
}  // namespace tessel
