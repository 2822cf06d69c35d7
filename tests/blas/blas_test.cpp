// libtessel_blas.so through its ABI (docs/blas.md): every layout, transposition and
// leading dimension on ragged shapes against an FP64 oracle (C poisoned with NaN
// where beta == 0, C's padding checked untouched), the quick returns, the error
// exits (xerbla_ and cblas_xerbla, defined here, are what the library's dlsym finds),
// and 8 threads at once against single-threaded results, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern "C" {
void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*,
            const float*, const int*, const float*, float*, const int*, size_t, size_t);
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
            const int*, const double*, const int*, const double*, double*, const int*, size_t, size_t);
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                 int);
}

// What the library reported last (the test's own xerbla_ and cblas_xerbla).
namespace {
std::string g_name;
int g_info = 0, g_calls = 0;
}  // namespace

extern "C" void xerbla_(const char* name, const int* info, size_t len) {
  g_name.assign(name, len);
  g_info = *info;
  ++g_calls;
}
extern "C" void cblas_xerbla(int info, const char* routine, const char* form, ...) {
  g_name = routine;
  g_info = info;
  ++g_calls;
  va_list ap;  // the message must format (it is printed by the reference's)
  va_start(ap, form);
  char buf[256];
  std::vsnprintf(buf, sizeof buf, form, ap);
  va_end(ap);
}

namespace {

enum { kRow = 101, kCol = 102, kNoTrans = 111, kTrans = 112, kConjTrans = 113 };

// One call's arguments in CBLAS terms; `path` says which entry point takes it.
enum class Path { Fortran, CblasCol, CblasRow };

template <class T>
struct Problem {
  Path path;
  char ta, tb;  // 'N', 'T', 'C'
  int m, n, k, lda, ldb, ldc;
  T alpha, beta;
};

bool tr(char t) { return t != 'N'; }
int cblas_trans(char t) { return t == 'N' ? kNoTrans : t == 'T' ? kTrans : kConjTrans; }

template <class T>
void call(const Problem<T>& p, const T* a, const T* b, T* c) {
  if (p.path == Path::Fortran) {
    if constexpr (sizeof(T) == 4)
      sgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, &p.alpha, a, &p.lda, b, &p.ldb, &p.beta, c, &p.ldc, 1, 1);
    else
      dgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, &p.alpha, a, &p.lda, b, &p.ldb, &p.beta, c, &p.ldc, 1, 1);
    return;
  }
  int layout = p.path == Path::CblasRow ? kRow : kCol;
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(layout, cblas_trans(p.ta), cblas_trans(p.tb), p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta,
                c, p.ldc);
  else
    cblas_dgemm(layout, cblas_trans(p.ta), cblas_trans(p.tb), p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta,
                c, p.ldc);
}

// Element (i, j) of a matrix stored with leading dimension ld in the call's layout.
int64_t at(bool row_major, int64_t i, int64_t j, int64_t ld) { return row_major ? i * ld + j : i + j * ld; }

// The lines (rows in row-major, columns in column-major) of the stored matrix
// whose op() is rows x cols.
int64_t outer(bool row_major, bool trans, int rows, int cols) {
  int stored_rows = trans ? cols : rows, stored_cols = trans ? rows : cols;
  return row_major ? stored_rows : stored_cols;
}

template <class T>
std::vector<T> random_matrix(std::mt19937_64& rng, int64_t n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(std::max<int64_t>(n, 1));
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Runs p on fresh random inputs and checks every element of C against an FP64
// oracle, and every element of C's buffer outside the matrix against its old bits.
template <class T>
void check(const Problem<T>& p, uint64_t seed) {
  SCOPED_TRACE(testing::Message() << (p.path == Path::Fortran ? "fortran" : p.path == Path::CblasRow ? "cblas row" : "cblas col")
                                  << " " << p.ta << p.tb << " m=" << p.m << " n=" << p.n << " k=" << p.k
                                  << " lda=" << p.lda << " ldb=" << p.ldb << " ldc=" << p.ldc << " alpha=" << p.alpha
                                  << " beta=" << p.beta << (sizeof(T) == 4 ? " f32" : " f64"));
  const bool row = p.path == Path::CblasRow;
  std::mt19937_64 rng(seed);
  std::vector<T> a = random_matrix<T>(rng, outer(row, tr(p.ta), p.m, p.k) * p.lda);
  std::vector<T> b = random_matrix<T>(rng, outer(row, tr(p.tb), p.k, p.n) * p.ldb);
  std::vector<T> c = random_matrix<T>(rng, outer(row, false, p.m, p.n) * p.ldc);
  std::vector<T> c0 = c;
  // beta == 0 never reads C: NaN there must not show.
  if (p.beta == 0)
    for (int i = 0; i < p.m; ++i)
      for (int j = 0; j < p.n; ++j) c[at(row, i, j, p.ldc)] = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> before = c;
  g_calls = 0;
  call(p, a.data(), b.data(), c.data());
  EXPECT_EQ(g_calls, 0) << "a valid call reported an error";
  auto op_a = [&](int i, int l) { return double(tr(p.ta) ? a[at(row, l, i, p.lda)] : a[at(row, i, l, p.lda)]); };
  auto op_b = [&](int l, int j) { return double(tr(p.tb) ? b[at(row, j, l, p.ldb)] : b[at(row, l, j, p.ldb)]); };
  const double eps = std::numeric_limits<T>::epsilon();
  std::vector<bool> inside(c.size(), false);
  int bad = 0;
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      double s = 0, mag = 0;
      for (int l = 0; l < p.k; ++l) {
        s += op_a(i, l) * op_b(l, j);
        mag += std::abs(op_a(i, l) * op_b(l, j));
      }
      int64_t ij = at(row, i, j, p.ldc);
      inside[ij] = true;
      double cij = p.beta == 0 ? 0 : double(c0[ij]);
      double want = double(p.alpha) * s + double(p.beta) * cij;
      double bound = 2 * (p.k + 2) * eps * (std::abs(double(p.alpha)) * mag + std::abs(double(p.beta) * cij)) + 1e-300;
      double got = double(c[ij]);
      if (!(std::abs(got - want) <= bound) && bad++ < 5)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", the oracle says " << want << " (bound "
                      << bound << ")";
    }
  for (size_t e = 0; e < c.size(); ++e)
    if (!inside[e] && std::memcmp(&c[e], &before[e], sizeof(T)) != 0 && bad++ < 5)
      ADD_FAILURE() << "element " << e << " of C's buffer, outside the matrix, was written";
  EXPECT_EQ(bad, 0);
}

template <class T>
void every_layout(const std::vector<std::array<int, 3>>& shapes, const std::vector<int>& pads,
                  const std::vector<std::pair<double, double>>& scalars) {
  uint64_t seed = 1;
  for (Path path : {Path::Fortran, Path::CblasCol, Path::CblasRow})
    for (char ta : {'N', 'T', 'C'})
      for (char tb : {'N', 'T', 'C'})
        for (auto [m, n, k] : shapes)
          for (int pad : pads)
            for (auto [alpha, beta] : scalars) {
              const bool row = path == Path::CblasRow;
              // Leading dimension: the stored matrix's line length (plus pad).
              auto ld = [&](bool trans, int rows, int cols) {
                int stored_rows = trans ? cols : rows, stored_cols = trans ? rows : cols;
                return std::max(1, row ? stored_cols : stored_rows) + pad;
              };
              Problem<T> p{path, ta, tb, m, n, k, ld(tr(ta), m, k), ld(tr(tb), k, n), ld(false, m, n), T(alpha), T(beta)};
              check(p, seed++);
              if (testing::Test::HasFailure()) return;
            }
}

const std::vector<std::array<int, 3>> kRagged = {{1, 1, 1}, {5, 3, 17}, {37, 29, 61}, {97, 130, 45}, {13, 70, 1}};
const std::vector<std::pair<double, double>> kScalars = {{1.5, 0}, {-0.75, 0.5}};

TEST(Blas, SgemmEveryLayoutTransposeAndLeadingDimension) { every_layout<float>(kRagged, {0, 3}, kScalars); }
TEST(Blas, DgemmEveryLayoutTransposeAndLeadingDimension) { every_layout<double>(kRagged, {0, 3}, kScalars); }
// Shapes large enough for the middle and large plans, and several groups per call.
TEST(Blas, SgemmLargerShapes) { every_layout<float>({{130, 131, 129}, {257, 530, 300}}, {1}, {{1.25, 0.5}}); }
TEST(Blas, DgemmLargerShapes) { every_layout<double>({{130, 131, 129}, {257, 530, 300}}, {1}, {{1.25, 0.5}}); }

// m or n of 0: nothing happens. alpha == 0 or k == 0: C = beta * C (beta == 0 writes
// zeros over NaN; beta == 1 leaves NaN alone), and A and B are never read.
template <class T>
void quick_returns() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (Path path : {Path::Fortran, Path::CblasCol, Path::CblasRow}) {
    SCOPED_TRACE(int(path));
    std::vector<T> c(12, nan);
    auto run = [&](int m, int n, int k, T alpha, T beta) {
      Problem<T> p{path, 'N', 'N', m, n, k, 4, 4, 4, alpha, beta};
      g_calls = 0;
      call<T>(p, nullptr, nullptr, c.data());
      EXPECT_EQ(g_calls, 0) << "a valid call reported an error";
    };
    run(0, 3, 2, 1, 0);
    run(3, 0, 2, 1, 0);
    for (T x : c) EXPECT_TRUE(std::isnan(x));
    run(3, 3, 2, 0, 1);  // alpha == 0, beta == 1: C untouched
    for (T x : c) EXPECT_TRUE(std::isnan(x));
    run(3, 3, 2, 0, 0);  // alpha == 0, beta == 0: zeros, C not read
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(c[i * 4 + j], T(0));
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(c[j * 4 + 3]));  // padding untouched
    for (int i = 0; i < 12; ++i) c[i] = T(i);
    run(3, 3, 0, 2, T(0.5));  // k == 0: C = beta * C
    for (int i = 0; i < 12; ++i) EXPECT_EQ(c[i], i % 4 == 3 ? T(i) : T(i) * T(0.5)) << i;
    run(3, 3, 4, 0, 2);  // alpha == 0: C = beta * C, A and B (null) unread
    for (int i = 0; i < 12; ++i) EXPECT_EQ(c[i], i % 4 == 3 ? T(i) : T(i)) << i;
  }
}
TEST(Blas, SgemmQuickReturns) { quick_returns<float>(); }
TEST(Blas, DgemmQuickReturns) { quick_returns<double>(); }

// Each bad argument: the right routine name and parameter number reach xerbla_ /
// cblas_xerbla once, and C is untouched.
template <class T>
void errors() {
  const std::string fname = sizeof(T) == 4 ? "SGEMM " : "DGEMM ";
  const std::string cname = sizeof(T) == 4 ? "cblas_sgemm" : "cblas_dgemm";
  std::vector<T> a(64, 1), b(64, 1);
  auto expect = [&](const std::string& name, int info, auto&& fn) {
    std::vector<T> c(64, T(7));
    g_calls = 0;
    g_info = 0;
    g_name.clear();
    fn(c.data());
    EXPECT_EQ(g_calls, 1) << name << " " << info;
    EXPECT_EQ(g_name, name);
    EXPECT_EQ(g_info, info) << name;
    for (T x : c) ASSERT_EQ(x, T(7)) << "C was written on an error (" << name << " " << info << ")";
  };
  // Fortran: TRANSA, TRANSB, M, N, K, LDA, LDB, LDC are parameters 1 2 3 4 5 8 10 13.
  auto f = [&](char ta, char tb, int m, int n, int k, int lda, int ldb, int ldc) {
    return [=, &a, &b](T* c) {
      T one = 1;
      if constexpr (sizeof(T) == 4)
        sgemm_(&ta, &tb, &m, &n, &k, &one, a.data(), &lda, b.data(), &ldb, &one, c, &ldc, 1, 1);
      else
        dgemm_(&ta, &tb, &m, &n, &k, &one, a.data(), &lda, b.data(), &ldb, &one, c, &ldc, 1, 1);
    };
  };
  expect(fname, 1, f('/', 'N', 2, 2, 2, 2, 2, 2));
  expect(fname, 2, f('N', 'x', 2, 2, 2, 2, 2, 2));
  expect(fname, 3, f('N', 'N', -1, 2, 2, 2, 2, 2));
  expect(fname, 4, f('t', 'N', 2, -1, 2, 2, 2, 2));
  expect(fname, 5, f('N', 'c', 2, 2, -1, 2, 2, 2));
  expect(fname, 8, f('N', 'N', 3, 2, 2, 2, 2, 3));   // lda < M
  expect(fname, 8, f('T', 'N', 2, 2, 3, 2, 3, 2));   // lda < K
  expect(fname, 10, f('N', 'N', 2, 2, 3, 2, 2, 2));  // ldb < K
  expect(fname, 10, f('N', 'T', 2, 3, 2, 2, 2, 2));  // ldb < N
  expect(fname, 13, f('N', 'N', 3, 2, 2, 3, 2, 2));  // ldc < M
  expect(fname, 8, f('N', 'N', 0, 0, 0, 0, 1, 1));   // lda < 1, checked before the quick return
  expect(fname, 3, f('N', 'N', -1, -1, -1, 0, 0, 0));  // the first bad one wins
  // CBLAS, numbered as the reference CBLAS: 1 layout, 2 TransA, 3 TransB; column-major
  // M 4, N 5, K 6, lda 9, ldb 11, ldc 14; row-major calls the Fortran routine with the
  // operands swapped, so N 4, M 5, K 6, ldb 9, lda 11, ldc 14.
  auto cb = [&](int layout, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
    return [=, &a, &b](T* c) {
      if constexpr (sizeof(T) == 4)
        cblas_sgemm(layout, ta, tb, m, n, k, 1, a.data(), lda, b.data(), ldb, 1, c, ldc);
      else
        cblas_dgemm(layout, ta, tb, m, n, k, 1, a.data(), lda, b.data(), ldb, 1, c, ldc);
    };
  };
  const int N = kNoTrans, T_ = kTrans;
  expect(cname, 1, cb(99, N, N, 2, 2, 2, 2, 2, 2));
  for (int layout : {kRow, kCol}) {
    expect(cname, 2, cb(layout, 0, N, 2, 2, 2, 2, 2, 2));
    expect(cname, 3, cb(layout, N, 114, 2, 2, 2, 2, 2, 2));
    expect(cname, 6, cb(layout, N, N, 2, 2, -1, 2, 2, 2));
  }
  expect(cname, 4, cb(kCol, N, N, -1, 2, 2, 2, 2, 2));
  expect(cname, 5, cb(kCol, N, N, 2, -1, 2, 2, 2, 2));
  expect(cname, 9, cb(kCol, N, N, 3, 2, 2, 2, 2, 3));
  expect(cname, 9, cb(kCol, T_, N, 2, 2, 3, 2, 3, 2));
  expect(cname, 11, cb(kCol, N, N, 2, 2, 3, 3, 2, 2));
  expect(cname, 11, cb(kCol, N, T_, 2, 3, 2, 2, 2, 2));
  expect(cname, 14, cb(kCol, N, N, 3, 2, 2, 3, 2, 2));
  expect(cname, 5, cb(kRow, N, N, -1, 2, 2, 2, 2, 2));
  expect(cname, 4, cb(kRow, N, N, 2, -1, 2, 2, 2, 2));
  expect(cname, 11, cb(kRow, N, N, 2, 2, 3, 2, 2, 2));   // lda < K
  expect(cname, 11, cb(kRow, T_, N, 3, 2, 2, 2, 2, 2));  // lda < M
  expect(cname, 9, cb(kRow, N, N, 2, 3, 2, 2, 2, 3));    // ldb < N
  expect(cname, 9, cb(kRow, N, T_, 2, 2, 3, 3, 2, 2));   // ldb < K
  expect(cname, 14, cb(kRow, N, N, 2, 3, 2, 2, 3, 2));   // ldc < N
}
TEST(Blas, SgemmErrorsReachXerbla) { errors<float>(); }
TEST(Blas, DgemmErrorsReachXerbla) { errors<double>(); }

// 8 threads at once, each on shapes of its own (sgemm and dgemm), against the same
// calls made one at a time beforehand: bit for bit.
TEST(Blas, EightThreadsMatchSingleThreadedRunsBitForBit) {
  struct Job {
    bool f64;
    Problem<float> ps;
    Problem<double> pd;
    std::vector<float> as, bs, cs, want_s;
    std::vector<double> ad, bd, cd, want_d;
  };
  std::vector<Job> jobs(8);
  std::mt19937_64 rng(42);
  for (int t = 0; t < 8; ++t) {
    Job& j = jobs[t];
    j.f64 = t % 2;
    int m = 40 + 37 * t, n = 300 - 23 * t, k = 20 + 41 * t;
    char ta = "NTNT"[t % 4], tb = "NNTT"[(t / 2) % 4];
    int lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
    j.ps = {Path::Fortran, ta, tb, m, n, k, lda, ldb, m, 1.5f, t % 3 ? 0.5f : 0.f};
    j.pd = {Path::Fortran, ta, tb, m, n, k, lda, ldb, m, 1.5, t % 3 ? 0.5 : 0.};
    if (j.f64) {
      j.ad = random_matrix<double>(rng, int64_t(lda) * (ta == 'N' ? k : m));
      j.bd = random_matrix<double>(rng, int64_t(ldb) * (tb == 'N' ? n : k));
      j.cd = random_matrix<double>(rng, int64_t(m) * n);
      j.want_d = j.cd;
      call(j.pd, j.ad.data(), j.bd.data(), j.want_d.data());
    } else {
      j.as = random_matrix<float>(rng, int64_t(lda) * (ta == 'N' ? k : m));
      j.bs = random_matrix<float>(rng, int64_t(ldb) * (tb == 'N' ? n : k));
      j.cs = random_matrix<float>(rng, int64_t(m) * n);
      j.want_s = j.cs;
      call(j.ps, j.as.data(), j.bs.data(), j.want_s.data());
    }
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Job& j = jobs[t];
      for (int round = 0; round < 5; ++round) {
        if (j.f64) {
          std::vector<double> c = j.cd;
          call(j.pd, j.ad.data(), j.bd.data(), c.data());
          mismatches[t] += std::memcmp(c.data(), j.want_d.data(), c.size() * sizeof(double)) != 0;
        } else {
          std::vector<float> c = j.cs;
          call(j.ps, j.as.data(), j.bs.data(), c.data());
          mismatches[t] += std::memcmp(c.data(), j.want_s.data(), c.size() * sizeof(float)) != 0;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// A child after fork() has none of the parent's threads: its GEMMs start threads of
// their own rather than wait for the parent's (SIGALRM ends a child that hangs).
TEST(Blas, ForkedChildComputes) {
  const int n = 300;  // several blocks of C, so the parent's call used its threads
  std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n, 0.0f);
  Problem<float> p{Path::Fortran, 'N', 'N', n, n, n, n, n, n, 1.0f, 0.0f};
  call(p, a.data(), b.data(), c.data());
  ASSERT_EQ(c[0], float(n));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);
    std::fill(c.begin(), c.end(), 0.0f);
    call(p, a.data(), b.data(), c.data());
    _exit(c[0] == float(n) && c[n * n - 1] == float(n) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  call(p, a.data(), b.data(), c.data());  // the parent's threads still serve it
  EXPECT_EQ(c[0], float(n));
}

}  // namespace
