// Operand buffers on 64 bytes for the cpu benchmarks (src/bench/cpu_impls.cpp).
// Every implementation's operands start on a cache line (an AVX-512 vector). With
// malloc's 16 bytes, where each buffer landed was the worker's heap history:
// tessel's B sat 32 or 48 bytes off a line at 64^3 and 128^3 while libxsmm's was on
// one, which alone cost tessel 9-13% there
// (docs/results/cpu-gemm-2026-12-01-session11, "Operand alignment in the bench").
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace tessel::bench {

template <class T>
struct LineAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  LineAligned() = default;
  template <class U>
  LineAligned(const LineAligned<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const LineAligned<U>&) const { return true; }
};

using LineAlignedFloats = std::vector<float, LineAligned<float>>;

inline LineAlignedFloats line_aligned_copy(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace tessel::bench
