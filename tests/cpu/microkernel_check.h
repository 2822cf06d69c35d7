// A micro-kernel with A and B read in place (cpu_microkernel.h's ABI: kc, a, b, c,
// ldc, lda, ldb, overwrite) against cpu_microkernel_reference: run with overwrite 0
// and then 1 (C's mr x nr block NaN-poisoned first, since it must not be read), the
// whole of C compared each time, columns past nr exactly. Failures name `what`.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "target/cpu/cpu_microkernel.h"

namespace tessel::test {

using UkrInPlaceFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);

inline void expect_microkernel_matches(UkrInPlaceFn f, int64_t mr, int64_t nr, int64_t kc, const std::vector<float>& a,
                                       int64_t lda, const std::vector<float>& b, int64_t ldb, std::vector<float>& c,
                                       int64_t ldc, const std::string& what) {
  for (int overwrite : {0, 1}) {
    if (overwrite)
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = NAN;
    std::vector<float> want = c;
    cpu_microkernel_reference(mr, nr, kc, a.data(), lda, b.data(), ldb, want.data(), ldc, overwrite);
    f(kc, a.data(), b.data(), c.data(), ldc, lda, ldb, overwrite);
    int bad = 0;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t j = 0; j < ldc; ++j) {
        float got = c[r * ldc + j], w = want[r * ldc + j];
        bool ok = j < nr ? std::abs(got - w) <= 1e-5f * (1 + std::abs(w)) : got == w;
        if (!ok && bad++ < 5)
          ADD_FAILURE() << what << " (overwrite " << overwrite << "): C[" << r << ", " << j << "] = " << got
                        << ", want " << w;
      }
  }
}

}  // namespace tessel::test
