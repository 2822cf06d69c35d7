// The sim's rounding to bf16 and f16 (round to nearest, ties to even), against
// exact cases and an independent oracle.
#include "target/sim/float_round.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

namespace tessel {
namespace {

float p2(int e) { return std::ldexp(1.0f, e); }

// Nearest value with `bits` significant bits (ties to even), by scaling in double.
double nearest(double x, int bits, int min_exponent) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);
  double ulp = std::ldexp(1.0, std::max(e - bits, min_exponent));
  double q = x / ulp, lo = std::floor(q), frac = q - lo;
  double n = frac > 0.5 ? lo + 1 : frac < 0.5 ? lo : (std::fmod(lo, 2.0) == 0 ? lo : lo + 1);
  return n * ulp;
}

TEST(FloatRound, Bf16TiesGoToEven) {
  EXPECT_EQ(round_to_bf16(1 + p2(-8)), 1.0f);                // tie, 1 is even
  EXPECT_EQ(round_to_bf16(1 + 3 * p2(-8)), 1 + p2(-6));      // tie, up to even
  EXPECT_EQ(round_to_bf16(1 + p2(-8) + p2(-20)), 1 + p2(-7));  // above the tie
  EXPECT_EQ(round_to_bf16(-(1 + 3 * p2(-8))), -(1 + p2(-6)));
  EXPECT_EQ(round_to_bf16(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(round_to_bf16(NAN)));
  EXPECT_EQ(round_to_bf16(3.4e38f), INFINITY);  // past bf16's largest finite value
}

TEST(FloatRound, F16TiesSubnormalsAndOverflow) {
  EXPECT_EQ(round_to_f16(1 + p2(-11)), 1.0f);
  EXPECT_EQ(round_to_f16(1 + 3 * p2(-11)), 1 + p2(-9));
  EXPECT_EQ(round_to_f16(65504.0f), 65504.0f);
  EXPECT_EQ(round_to_f16(65519.0f), 65504.0f);
  EXPECT_EQ(round_to_f16(65520.0f), INFINITY);  // the tie with 65536 rounds to even: overflow
  EXPECT_EQ(round_to_f16(-70000.0f), -INFINITY);
  EXPECT_EQ(round_to_f16(p2(-25)), 0.0f);            // tie between 0 and 2^-24
  EXPECT_EQ(round_to_f16(3 * p2(-25)), p2(-23));     // tie between 2^-24 and 2^-23
  EXPECT_EQ(round_to_f16(p2(-24) * 1.4f), p2(-24));  // subnormal spacing 2^-24
  EXPECT_TRUE(std::signbit(round_to_f16(-p2(-26))));  // rounds to -0
}

TEST(FloatRound, AgreesWithAnIndependentOracleOnRandomValues) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int n = 0; n < 200000; ++n) {
    float x = std::bit_cast<float>(bits(rng));
    if (!std::isfinite(x)) continue;
    double bf = nearest(x, 8, -133);  // bf16: fp32's exponents, 8 significant bits
    if (std::fabs(bf) > 3.3895313892515355e38) bf = std::copysign(INFINITY, bf);
    ASSERT_EQ(round_to_bf16(x), static_cast<float>(bf)) << x;
    // f16's range: exponents from below its subnormals to past its largest value.
    float narrow = std::ldexp(1.0f + (bits(rng) >> 9) * p2(-23), static_cast<int>(bits(rng) % 48) - 30);
    if (bits(rng) & 1) narrow = -narrow;
    double h = nearest(narrow, 11, -24);
    if (std::fabs(h) > 65504) h = std::copysign(INFINITY, h);
    ASSERT_EQ(round_to_f16(narrow), static_cast<float>(h)) << narrow;
#ifdef __FLT16_MAX__
    ASSERT_EQ(round_to_f16(narrow), static_cast<float>(static_cast<_Float16>(narrow))) << narrow;
#endif
  }
}

}  // namespace
}  // namespace tessel
