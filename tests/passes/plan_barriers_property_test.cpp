// Property: for random GroupIR programs with a fence after every op, the planned
// program is race free on the sim and leaves exactly the same bits in every
// tensor as the unplanned one. Some loop bodies have their fence at the top
// instead of the bottom, and async copies have other work in flight. Programs use 1-2 groups (each on its own 8 rows of
// the two global tensors; an async copy's source is not written while it is in
// flight), 4-8 workers, three 8x8 shared buffers (two of them
// with two versions), two 8x8 fragments, loops with small trip counts and
// branches on the group or the loop variable.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "build.h"
#include "sim_check.h"

namespace tessel::test {
namespace {

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed), b_(pick(4, 8)) {
    // Worker grids over the 8x8 fragments; some workers may own nothing.
    struct Grid { int rows, cols; };
    std::vector<Grid> grids = {{2, 2}, {1, 4}, {4, 1}, {1, 2}, {2, 1}};
    if (b_.p.workers >= 8) grids.push_back({2, 4});
    Grid g = grids[pick(0, static_cast<int>(grids.size()) - 1)];
    b_.p.worker_rows = g.rows;
    b_.p.worker_cols = g.cols;
    groups_ = pick(1, 2);
    b_.p.grid = {{"g", c(groups_)}};
    for (const char* name : {"X", "Y"}) {
      TensorParam t = matrix(name, "R", "C", "C", Access::InOut);
      b_.p.tensors.push_back(t);
      Buffer buf;
      buf.name = name;
      buf.space = Space::Global;
      buf.tensor = static_cast<int>(b_.p.tensors.size()) - 1;
      global_.push_back(b_.buffer(buf));
    }
    b_.p.size_params = {"R", "C"};
    shared_ = {b_.shared("S0", 8, 8, 1), b_.shared("S1", 8, 8, 2), b_.shared("S2", 8, 8, 2)};
    b_.p.buffers[shared_[2]].layout = Layout::ColPanels;
    b_.p.buffers[shared_[2]].panel = 4;
    frags_ = {b_.frag("F0", 8, 8), b_.frag("F1", 8, 8)};
  }

  GroupProgram program() {
    b_.p.body = region(0, pick(3, 8));
    return with_global_strides(b_.p);
  }
  std::map<std::string, int64_t> sizes() const { return {{"R", 8 * groups_}, {"C", 8}}; }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(1, 100) <= percent; }

  // A version for a shared buffer: constants, or the loop variable rotated.
  Expr version(int buffer) {
    if (b_.p.buffer(buffer).versions == 1) return nullptr;
    if (!ivs_.empty() && chance(60)) {
      Expr iv = s(ivs_[pick(0, static_cast<int>(ivs_.size()) - 1)]);
      return expr_mod(iv + pick(0, 2), c(2));  // (k + 2) % 2 is k's slot again
    }
    return c(pick(0, 1));
  }
  int any_shared() {
    int b = shared_[pick(0, 2)];
    return b == avoid_ ? shared_[(b - shared_[0] + 1) % 3] : b;
  }
  int any_global() { return global_[pick(0, 1)]; }
  // A global to write: not the one an async copy in flight reads (its source).
  int global_to_write() {
    int b = any_global();
    return b == avoid_global_ ? global_[0] + global_[1] - b : b;
  }
  int any_frag() { return frags_[pick(0, 1)]; }

  // A rows x cols window inside an 8x8 block that starts at (row0, 0).
  struct Window {
    int64_t rows, cols, r, c;
  };
  Window window() {
    Window w{pick(1, 8), pick(1, 8), 0, 0};
    w.r = pick(0, 8 - static_cast<int>(w.rows));
    w.c = pick(0, 8 - static_cast<int>(w.cols));
    return w;
  }
  BufferRef at(int buffer, int64_t r, int64_t col) {
    if (b_.p.buffer(buffer).space == Space::Global) return ref(buffer, s("g") * 8 + r, c(col));
    return ref(buffer, c(r), c(col), version(buffer));
  }

  GroupOp memory_op() {
    switch (pick(0, 8)) {
      case 0:
      case 1: {  // global -> shared
        Window w = window(), d = window();
        GroupOp o = b_.copy(at(any_global(), w.r, w.c), at(any_shared(), 0, 0), 0, 0, pick(1, 4));
        o.rows = std::min(w.rows, 8 - d.r);
        o.cols = std::min(w.cols, 8 - d.c);
        o.dst.row = c(d.r);
        o.dst.col = c(d.c);
        return o;
      }
      case 2: {  // shared -> shared, two different buffers
        int from = any_shared() - shared_[0], to = (from + pick(1, 2)) % 3;
        if (shared_[to] == avoid_) to = 3 - from - to;
        Window w = window();
        return b_.copy(at(shared_[from], w.r, w.c), at(shared_[to], w.r, w.c), w.rows, w.cols, pick(1, 4));
      }
      case 3: {  // shared -> global
        Window w = window();
        return b_.copy(at(any_shared(), w.r, w.c), at(global_to_write(), w.r, w.c), w.rows, w.cols, pick(1, 4));
      }
      case 4: return b_.frag_load(any_frag(), at(any_shared(), 0, 0));
      case 5: return b_.frag_store(any_frag(), at(any_shared(), 0, 0));
      case 6: return b_.frag_store(any_frag(), at(global_to_write(), 0, 0));
      case 7: {
        int k = pick(1, 8);
        return b_.mma(frags_[0], at(any_shared(), 0, 0), at(any_shared(), 0, 0), 8, 8, k);
      }
      default: return chance(50) ? b_.add(frags_[1], frags_[0], frags_[1]) : b_.fill(any_frag(), pick(1, 3));
    }
  }

  // `n` items, each followed by a fence (now and then a native barrier instead).
  std::vector<GroupOp> region(int depth, int n) {
    std::vector<GroupOp> ops;
    for (int i = 0; i < n; ++i) {
      int kind = pick(0, 99);
      if (depth < 2 && kind < 12) {
        std::string iv = "k" + std::to_string(depth);
        int lo = pick(0, 1);
        ivs_.push_back(iv);
        std::vector<GroupOp> body = region(depth + 1, pick(1, 4));
        ivs_.pop_back();
        if (chance(30)) {  // the fence at the top of the body, guarding the back edge
          body.pop_back();
          body.insert(body.begin(), b_.fence());
        }
        ops.push_back(b_.loop(iv, c(lo), c(lo + pick(0, 3)), std::move(body)));
      } else if (depth < 2 && kind < 20) {
        Expr lhs = ivs_.empty() || chance(50) ? s("g") : s(ivs_.back());
        std::vector<GroupOp> then_body = region(depth + 1, pick(0, 3));
        std::vector<GroupOp> else_body = region(depth + 1, pick(0, 3));
        ops.push_back(b_.branch(lhs, CmpOp::EQ, c(pick(0, 1)), std::move(then_body), std::move(else_body)));
      } else if (kind < 24 && avoid_ < 0) {
        // Async copy into shared: issue, commit, other work that leaves the
        // destination alone while the copy is in flight, wait.
        Window w = window();
        GroupOp o = b_.copy(at(any_global(), w.r, w.c), at(any_shared(), w.r, w.c), w.rows, w.cols, pick(1, 4));
        o.async = true;
        avoid_ = o.dst.buffer;
        avoid_global_ = o.src.buffer;
        ops.push_back(o);
        ops.push_back(b_.fence());
        ops.push_back(b_.op(GroupOpKind::AsyncCommit));
        for (int k = pick(0, 2); k > 0; --k) {
          ops.push_back(b_.fence());
          ops.push_back(memory_op());
        }
        ops.push_back(b_.fence());
        ops.push_back(b_.op(GroupOpKind::AsyncWait));
        avoid_ = -1;
        avoid_global_ = -1;
      } else {
        ops.push_back(memory_op());
      }
      ops.push_back(chance(5) ? b_.barrier() : b_.fence());
    }
    return ops;
  }

  std::mt19937_64 rng_;
  Builder b_;
  int groups_ = 1;
  std::vector<int> global_, shared_, frags_;
  std::vector<std::string> ivs_;
  int avoid_ = -1;  // a shared buffer an async copy is writing
  int avoid_global_ = -1;  // the global buffer it reads (until its async.wait)
};

TEST(PlanBarriersProperty, RandomProgramsStayRaceFreeAndExact) {
  const int programs = 2000;
  auto start = std::chrono::steady_clock::now();
  int64_t fences_before = 0, fences_after = 0;
  for (int i = 0; i < programs; ++i) {
    Generator gen(1000 + i);
    GroupProgram p = gen.program();
    PlannedPair r = plan_and_run(p, gen.sizes(), i);
    ASSERT_EQ(r.before.result.race_count, 0) << "generator made a racy program, seed " << 1000 + i;
    ASSERT_TRUE(r.ok()) << "seed " << 1000 + i << ": " << r.why() << "\nbefore: " << shape(p.body)
                        << "\nafter:  " << shape(r.planned.body);
    fences_before += r.stats.static_before;
    fences_after += r.stats.static_after;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The property is only worth something if the pass removes a good share.
  EXPECT_LT(fences_after * 10, fences_before * 8) << fences_after << " of " << fences_before;
  std::printf("%d programs, fence sites %lld -> %lld, %.2f s\n", programs,
              static_cast<long long>(fences_before), static_cast<long long>(fences_after), seconds);
}

}  // namespace
}  // namespace tessel::test
