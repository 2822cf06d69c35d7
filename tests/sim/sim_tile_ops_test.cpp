// The sim on the ops of general tile kernels, each program checked against a
// computation by hand (FP64 where it sums) on random data, outputs poisoned with
// NaN first: reductions across the worker grid (partial, fence, combine),
// replicated fragments stored once, strided and transposed global windows,
// padding, batched grids of three dimensions; and the races these ops can have.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "target/sim/sim.h"
#include "tessel/error.h"
#include "transpose_program.h"

namespace tessel {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

GroupProgram program(const std::string& text) {
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  return p;
}

// Random values in [-2, -0.5] U [0.5, 2]: never zero.
std::vector<float> random_data(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.5f, 2.0f);
  std::bernoulli_distribution neg(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = neg(rng) ? -mag(rng) : mag(rng);
  return v;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Row sums and row maxima (axis 1) and column sums (axis 0) of an M x 8 matrix,
// 8 rows per group, over a 2 x 2 worker grid (and one surplus worker): each
// reduction is a partial per worker into shared scratch, a fence, and a combine.
// r, m and c are replicated along the reduced axis; their stores write each
// element once (only owners store).
const char* kReduce = R"(group reduce(sizes M, N, G; tensors X: f32[M, N] strides(N, 1) in, S: f32[M] strides(1) out, Mx: f32[M] strides(1) out, T: f32[G, N] strides(N, 1) out; scalars) {
  grid i = G
  workers 5 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: global f32 tensor S
  buffer Mx: global f32 tensor Mx
  buffer T: global f32 tensor T
  buffer Rs: shared f32[8, 2] row panel 1 versions 1
  buffer Cs: shared f32[2, 8] row panel 1 versions 1
  buffer x: private f32[8, 8] row panel 1 versions 1
  buffer r: private f32[8, 1] row panel 1 versions 1
  buffer m: private f32[8, 1] row panel 1 versions 1
  buffer c: private f32[1, 8] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), 0] strides(N, 1) guard src(M, N)
  reduce.sum #1 Rs[0, 0] <- x axis 1 partial
  reduce.sum #2 Cs[0, 0] <- x axis 0 partial
  fence #3
  reduce.sum #4 r <- Rs[0, 0] axis 1 combine 8x2
  reduce.sum #5 c <- Cs[0, 0] axis 0 combine 2x8
  fence #6
  frag.load #7 x <- X[(i * 8), 0] strides(N, 1) pad -inf guard src(M, N)
  reduce.max #8 Rs[0, 0] <- x axis 1 partial
  fence #9
  reduce.max #10 m <- Rs[0, 0] axis 1 combine 8x2
  frag.store #11 S[(i * 8), 0] strides(1, 0) <- r guard dst(M, _)
  frag.store #12 Mx[(i * 8), 0] strides(1, 0) <- m guard dst(M, _)
  frag.store #13 T[i, 0] strides(N, 1) <- c
}
)";

struct ReduceRun {
  int64_t m;
  std::vector<float> x, s, mx, t;
  SimResult result;
};

ReduceRun run_reduce(const GroupProgram& p, int64_t m, uint64_t seed) {
  const int64_t n = 8, g = (m + 7) / 8;
  ReduceRun run{m, random_data(m * n, seed), std::vector<float>(m, kNaN),
                std::vector<float>(m, kNaN), std::vector<float>(g * n, kNaN), {}};
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"G", g}};
  args.tensors = {{"X", run.x.data()}, {"S", run.s.data()}, {"Mx", run.mx.data()}, {"T", run.t.data()}};
  run.result = run_sim(p, args);
  return run;
}

TEST(SimTileOps, ReduceAcrossTheWorkerGridMatchesAHandComputation) {
  for (int64_t m : {8, 21, 3}) {
    ReduceRun run = run_reduce(program(kReduce), m, 11 + m);
    EXPECT_EQ(run.result.race_count, 0) << (run.result.races.empty() ? "" : run.result.races[0].message);
    const float eps = std::numeric_limits<float>::epsilon();
    for (int64_t r = 0; r < m; ++r) {
      double sum = 0, mag = 0, max = -INFINITY;
      for (int64_t c = 0; c < 8; ++c) {
        double v = run.x[r * 8 + c];
        sum += v;
        mag += std::fabs(v);
        max = std::max(max, v);
      }
      EXPECT_LE(std::fabs(run.s[r] - sum), 10 * eps * mag) << "row sum " << r << " of " << m;
      EXPECT_EQ(run.mx[r], max) << "row max " << r << " of " << m;
    }
    for (int64_t g = 0; g < (m + 7) / 8; ++g)
      for (int64_t c = 0; c < 8; ++c) {
        double sum = 0, mag = 0;
        for (int64_t r = g * 8; r < std::min(m, g * 8 + 8); ++r) {
          sum += run.x[r * 8 + c];
          mag += std::fabs(run.x[r * 8 + c]);
        }
        EXPECT_LE(std::fabs(run.t[g * 8 + c] - sum), 10 * eps * mag)
            << "column sum " << c << " of group " << g << " (M = " << m << ")";
      }
  }
}

// A partial's write and a combine's read of one scratch element with no fence
// between: every worker reads the partials the others write.
TEST(SimTileOps, PartialAndCombineWithoutAFenceRace) {
  GroupProgram p = program(kReduce);
  std::erase_if(p.body, [](const GroupOp& op) { return op.id == 3; });
  ReduceRun run = run_reduce(p, 8, 5);
  ASSERT_GT(run.result.race_count, 0);
  bool found = false;
  for (const Race& r : run.result.races)
    found = found || (has(r.message, "reduce #1") && has(r.message, "reduce #4") && r.buffer == "Rs");
  EXPECT_TRUE(found) << run.result.races[0].message;
  // The fence between the combine's read and the next partial's write (WAR).
  p = program(kReduce);
  std::erase_if(p.body, [](const GroupOp& op) { return op.id == 6; });
  run = run_reduce(p, 8, 5);
  ASSERT_GT(run.result.race_count, 0);
  EXPECT_TRUE(has(run.result.races[0].message, "reduce #8")) << run.result.races[0].message;
}

// A local reduce where no other worker holds part of the same rows (a 2 x 1 grid):
// each worker's result is the whole row's.
TEST(SimTileOps, LocalReduceWhenTheAxisIsNotSplit) {
  GroupProgram p = program(R"(group local(sizes M; tensors X: f32[M, 8] strides(8, 1) in, S: f32[M] strides(1) out; scalars) {
  grid i = ceildiv(M, 8)
  workers 2 grid 2x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: global f32 tensor S
  buffer x: private f32[8, 8] row panel 1 versions 1
  buffer r: private f32[8, 1] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), 0] strides(8, 1) pad inf guard src(M, 8)
  reduce.min #1 r = x axis 1
  frag.store #2 S[(i * 8), 0] strides(1, 0) <- r guard dst(M, _)
}
)");
  const int64_t m = 13;
  std::vector<float> x = random_data(m * 8, 3), s(m, kNaN);
  LaunchArgs args;
  args.sizes = {{"M", m}};
  args.tensors = {{"X", x.data()}, {"S", s.data()}};
  EXPECT_EQ(run_sim(p, args).race_count, 0);
  for (int64_t r = 0; r < m; ++r)
    EXPECT_EQ(s[r], *std::min_element(x.begin() + r * 8, x.begin() + r * 8 + 8)) << r;
}

// A [R, 1] fragment replicated over 2 worker columns and a [1, C] one over 2 worker
// rows, computed by every replica and stored by owners only: each element written
// once (a second writer in the group would be a race), with the right value.
TEST(SimTileOps, ReplicatedFragmentsAreStoredOnce) {
  GroupProgram p = program(R"(group vectors(sizes; tensors V: f32[8] strides(1) in, W: f32[6] strides(1) in, A: f32[8] strides(1) out, B: f32[6] strides(1) out; scalars) {
  grid g = 1
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer V: global f32 tensor V
  buffer W: global f32 tensor W
  buffer A: global f32 tensor A
  buffer B: global f32 tensor B
  buffer r: private f32[8, 1] row panel 1 versions 1
  buffer c: private f32[1, 6] row panel 1 versions 1
  frag.load #0 r <- V[0, 0] strides(1, 0)
  frag.load #1 c <- W[0, 0] strides(0, 1)
  ew #2 r = mul r, 3
  ew #3 c = add c, -0.5
  frag.store #4 A[0, 0] strides(1, 0) <- r
  frag.store #5 B[0, 0] strides(0, 1) <- c
}
)");
  std::vector<float> v = random_data(8, 1), w = random_data(6, 2), a(8, kNaN), b(6, kNaN);
  LaunchArgs args;
  args.tensors = {{"V", v.data()}, {"W", w.data()}, {"A", a.data()}, {"B", b.data()}};
  SimResult result = run_sim(p, args);
  EXPECT_EQ(result.race_count, 0) << (result.races.empty() ? "" : result.races[0].message);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a[i], v[i] * 3) << i;
  for (int j = 0; j < 6; ++j) EXPECT_EQ(b[j], w[j] - 0.5f) << j;
}

// The sum of a [1, 8] row over a 2 x 2 grid: the two worker rows hold replicas of
// the row; only the owners' partials go to scratch (a replica writing the same
// element would race), and every worker combines the two.
TEST(SimTileOps, PartialOfAReplicatedSourceIsWrittenByOwnersOnly) {
  GroupProgram p = program(R"(group rowsum(sizes; tensors W: f32[8] strides(1) in, S: f32[1] strides(1) out; scalars) {
  grid g = 1
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer W: global f32 tensor W
  buffer S: global f32 tensor S
  buffer Rs: shared f32[1, 2] row panel 1 versions 1
  buffer c: private f32[1, 8] row panel 1 versions 1
  buffer t: private f32[1, 1] row panel 1 versions 1
  frag.load #0 c <- W[0, 0] strides(0, 1)
  reduce.sum #1 Rs[0, 0] <- c axis 1 partial
  fence #2
  reduce.sum #3 t <- Rs[0, 0] axis 1 combine 1x2
  frag.store #4 S[0, 0] strides(0, 1) <- t
}
)");
  std::vector<float> w = random_data(8, 21), s(1, kNaN);
  LaunchArgs args;
  args.tensors = {{"W", w.data()}, {"S", s.data()}};
  SimResult result = run_sim(p, args);
  EXPECT_EQ(result.race_count, 0) << (result.races.empty() ? "" : result.races[0].message);
  float first = 0, second = 0;  // the two workers' halves, summed in order
  for (int j = 0; j < 4; ++j) first += w[j];
  for (int j = 4; j < 8; ++j) second += w[j];
  EXPECT_EQ(s[0], first + second);
}

// Z (C x R) = X^T (X: R x C, row-major) two ways: through a transposed view of X
// (strides(1, C): window element (r, c) is X[c][r]) and through frag.load
// transpose of a plain window. 8 x 8 tiles over a ragged grid, guarded.
TEST(SimTileOps, StridedAndTransposedGlobalLoads) {
  for (const char* load :
       {"frag.load #0 z <- X[(i * 8), (j * 8)] strides(1, C) guard src(C, R)",
        "frag.load #0 z <- X[(j * 8), (i * 8)] strides(C, 1) transpose guard src(R, C)"}) {
    GroupProgram p = program(test::transpose_program(8, 2, 2, load));
    const int64_t rows = 11, cols = 19;
    std::vector<float> x = random_data(rows * cols, 4), z(rows * cols, kNaN);
    LaunchArgs args;
    args.sizes = {{"R", rows}, {"C", cols}};
    args.tensors = {{"X", x.data()}, {"Z", z.data()}};
    EXPECT_EQ(run_sim(p, args).race_count, 0) << load;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(z[c * rows + r], x[r * cols + c]) << load << " at " << r << ", " << c;
  }
}

// Elements outside the source bound read as the padding: through a copy into
// shared memory and through a frag.load; the 8 x 8 output is stored whole.
TEST(SimTileOps, PaddingFillsWhatLiesOutsideTheSource) {
  GroupProgram p = program(R"(group pad(sizes R, C; tensors X: f32[R, C] strides(C, 1) in, Y: f32[8, 8] strides(8, 1) out, Z: f32[8, 8] strides(8, 1) out; scalars) {
  grid g = 1
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Z: global f32 tensor Z
  buffer S: shared f32[8, 8] row panel 1 versions 1
  buffer y: private f32[8, 8] row panel 1 versions 1
  buffer z: private f32[8, 8] row panel 1 versions 1
  copy #0 X[0, 0] strides(C, 1) -> S[0, 0] 8x8 batch 3 pad 2.5 guard src(R, C)
  fence #1
  frag.load #2 y <- S[0, 0]
  frag.load #3 z <- X[0, 0] strides(C, 1) pad -inf guard src(R, C)
  frag.store #4 Y[0, 0] strides(8, 1) <- y
  frag.store #5 Z[0, 0] strides(8, 1) <- z
}
)");
  const int64_t rows = 5, cols = 3;
  std::vector<float> x = random_data(rows * cols, 9), y(64, kNaN), z(64, kNaN);
  LaunchArgs args;
  args.sizes = {{"R", rows}, {"C", cols}};
  args.tensors = {{"X", x.data()}, {"Y", y.data()}, {"Z", z.data()}};
  EXPECT_EQ(run_sim(p, args).race_count, 0);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      bool inside = r < rows && c < cols;
      EXPECT_EQ(y[r * 8 + c], inside ? x[r * cols + c] : 2.5f) << r << ", " << c;
      EXPECT_EQ(z[r * 8 + c], inside ? x[r * cols + c] : -INFINITY) << r << ", " << c;
    }
}

// A batch of matrices with padding between rows and between batches, one grid
// dimension per batch, row tile and column tile: Z[b] = X[b] * 2 + b.
TEST(SimTileOps, ThreeDimensionalGridOverABatchedTensor) {
  GroupProgram p = program(R"(group batched(sizes B, M, N, ldx, sx, ldz, sz; tensors X: f32[B, M, N] strides(sx, ldx, 1) in, Z: f32[B, M, N] strides(sz, ldz, 1) out; scalars) {
  grid b = B, i = ceildiv(M, 4), j = ceildiv(N, 4)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Z: global f32 tensor Z
  buffer x: private f32[4, 4] row panel 1 versions 1
  frag.load #0 x <- X[(i * 4), (j * 4)] strides(ldx, 1) offset((b * sx)) guard src(M, N)
  ew #1 x = mul x, 2
  ew #2 x = add x, #(b)
  frag.store #3 Z[(i * 4), (j * 4)] strides(ldz, 1) offset((b * sz)) <- x guard dst(M, N)
}
)");
  const int64_t batches = 3, m = 6, n = 7, ldx = 9, sx = 60, ldz = 8, sz = 50;
  std::vector<float> x = random_data(batches * sx, 13), z(batches * sz, kNaN);
  LaunchArgs args;
  args.sizes = {{"B", batches}, {"M", m}, {"N", n}, {"ldx", ldx}, {"sx", sx}, {"ldz", ldz}, {"sz", sz}};
  args.tensors = {{"X", x.data()}, {"Z", z.data()}};
  EXPECT_EQ(run_sim(p, args).race_count, 0);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c)
        ASSERT_EQ(z[b * sz + r * ldz + c], x[b * sx + r * ldx + c] * 2 + float(b)) << b << r << c;
  // Only the tensor's elements were written: the padding between rows stays NaN.
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < m; ++r) EXPECT_TRUE(std::isnan(z[b * sz + r * ldz + n]));
}

// Two batches whose offsets overlap (sz smaller than a matrix): the groups of
// different batches write the same elements, which the detector reports by address.
TEST(SimTileOps, OverlappingBatchWindowsRaceAcrossGroups) {
  GroupProgram p = program(R"(group overlap(sizes M, sz; tensors Z: f32[M, 4] strides(4, 1) out; scalars) {
  grid b = 2
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer Z: global f32 tensor Z
  buffer x: private f32[4, 4] row panel 1 versions 1
  frag.fill #0 x = 1
  frag.store #1 Z[0, 0] strides(4, 1) offset((b * sz)) <- x guard dst(2, 4)
}
)");
  std::vector<float> z(16, kNaN);
  LaunchArgs args;
  args.sizes = {{"M", 4}, {"sz", 4}};
  args.tensors = {{"Z", z.data()}};
  SimResult r = run_sim(p, args);
  EXPECT_EQ(r.race_count, 4);  // row 1 of batch 0 is row 0 of batch 1
  args.sizes["sz"] = 8;
  EXPECT_EQ(run_sim(p, args).race_count, 0);
}

TEST(SimTileOps, GlobalAccessOutsideTheTensorIsARuntimeError) {
  GroupProgram p = program(R"(group outside(sizes M; tensors Z: f32[M, 4] strides(4, 1) out; scalars) {
  grid g = 1
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer Z: global f32 tensor Z
  buffer x: private f32[4, 4] row panel 1 versions 1
  frag.fill #0 x = 1
  frag.store #1 Z[1, 0] strides(4, 1) <- x
}
)");
  std::vector<float> z(16, kNaN);
  LaunchArgs args;
  args.sizes = {{"M", 4}};
  args.tensors = {{"Z", z.data()}};
  try {
    run_sim(p, args);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_TRUE(has(e.what(), "frag.store #1 writes Z[4, 0] at element 16 (offset 0, strides 4, 1), "
                              "outside the tensor's 16 elements"))
        << e.what();
  }
}

}  // namespace
}  // namespace tessel
