#include "target/cpu/cpu_support.h"

#include <algorithm>
#include <cstring>

namespace tessel {
namespace {

int64_t clamp(int64_t x, int64_t hi) { return std::clamp<int64_t>(x, 0, hi); }

int64_t offset(const CpuWindow& w, int64_t r, int64_t c) {
  r += w.r0;
  c += w.c0;
  if (w.layout == 0) return r * w.ld + c * w.cs;
  if (w.layout == 1) return (c / w.panel * w.rows + r) * w.panel + c % w.panel;
  return (r / w.panel * w.cols + c) * w.panel + r % w.panel;
}

void fill(float* to, float pad, int64_t n) { std::fill(to, to + n, pad); }

}  // namespace

void cpu_copy_guarded(const CpuWindow* src, const CpuWindow* dst, int64_t rows, int64_t cols, float pad) {
  const CpuWindow& s = *src;
  const CpuWindow& d = *dst;
  const int64_t src_rows = clamp(s.rb - s.r0, rows), src_cols = clamp(s.cb - s.c0, cols);
  const int64_t dst_rows = clamp(d.rb - d.r0, rows), dst_cols = clamp(d.cb - d.c0, cols);
  for (int64_t r = 0; r < dst_rows; ++r) {
    const int64_t valid = r < src_rows ? std::min(src_cols, dst_cols) : 0;
    if (s.layout == 0 && d.layout == 0 && s.cs == 1 && d.cs == 1) {
      const float* from = s.base + (s.r0 + r) * s.ld + s.c0;
      float* to = d.base + (d.r0 + r) * d.ld + d.c0;
      if (valid > 0) std::memcpy(to, from, valid * sizeof(float));
      fill(to + valid, pad, dst_cols - valid);
    } else if (s.layout == 0 && s.cs == 1 && d.layout == 1 && d.c0 % d.panel == 0) {
      // Packing B at an edge: panel-wide runs are contiguous on both sides.
      const float* from = s.base + (s.r0 + r) * s.ld + s.c0;
      for (int64_t c0 = 0; c0 < dst_cols; c0 += d.panel) {
        float* to = d.base + ((d.c0 + c0) / d.panel * d.rows + d.r0 + r) * d.panel;
        const int64_t n = clamp(dst_cols - c0, d.panel), v = clamp(valid - c0, n);
        if (v > 0) std::memcpy(to, from + c0, v * sizeof(float));
        fill(to + v, pad, n - v);
      }
    } else {
      for (int64_t c = 0; c < valid; ++c) d.base[offset(d, r, c)] = s.base[offset(s, r, c)];
      for (int64_t c = valid; c < dst_cols; ++c) d.base[offset(d, r, c)] = pad;
    }
  }
}

void* const* cpu_support_table() {
  static void* const table[] = {reinterpret_cast<void*>(&cpu_copy_guarded)};
  return table;
}

}  // namespace tessel
