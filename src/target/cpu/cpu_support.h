// Code that every unit the cpu emitter writes may call but none needs inlined,
// compiled once into tessel instead of into each kernel (the guarded copy alone
// took about a third of the -O2 compile of a matrix-product unit).
//
// The ABI between tessel and an emitted unit: the unit exports
//   extern "C" void tessel_bind(void* const* table);
// which the JIT calls once after dlopen with cpu_support_table(); entry i of the
// table is the function the unit's prelude declares at index i (cpu_emit.cpp). The
// table's order and each function's signature are part of the unit's source, so a
// change to them changes every kernel's cache key.
#pragma once
#include <cstdint>

namespace tessel {

// A window of a buffer (the unit's tsl_win, field for field): layout 0 strided
// (element (r, c) at r * ld + c * cs), 1 column panels, 2 row panels (rows x cols
// with panel width `panel`); (r0, c0) its top-left element; elements at or beyond
// (rb, cb) are outside.
struct CpuWindow {
  float* base;
  int64_t layout, ld, cs, rows, cols, panel, r0, c0, rb, cb;
};

// Entry 0. dst = src over rows x cols (fp32 on both sides): source elements outside
// read as `pad`; destination elements outside are left alone.
void cpu_copy_guarded(const CpuWindow* src, const CpuWindow* dst, int64_t rows, int64_t cols, float pad);

// The table handed to tessel_bind.
void* const* cpu_support_table();

}  // namespace tessel
