// op_effects and effects_conflict: the aliasing facts plan_barriers stands on.
#include "ir/group_effects.h"

#include <gtest/gtest.h>

#include "build.h"

namespace tessel::test {
namespace {

MemEffect shared_effect(int buffer, Expr version, bool write) {
  return MemEffect{buffer, Space::Shared, version, write};
}

TEST(GroupEffects, CopyReadsItsSourceAndWritesItsDestination) {
  Builder b;
  int x = b.tensor("X"), s1 = b.shared("S1", 8, 8, 2), f = b.frag("F", 8, 8);
  std::vector<MemEffect> e = op_effects(b.p, b.copy(ref(x), ref(s1, 0, 0, expr_mod(s("k") + 1, c(2))), 8, 8));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].space, Space::Global);
  EXPECT_FALSE(e[0].write);
  EXPECT_EQ(e[1].buffer, s1);
  EXPECT_TRUE(e[1].write);
  EXPECT_EQ(expr_to_string(e[1].version), "((k + 1) % 2)");
  // Fragments are private: a load reports only its shared source.
  e = op_effects(b.p, b.frag_load(f, ref(s1)));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].write);
  EXPECT_EQ(expr_to_string(e[0].version), "0");  // a null version is slot 0
  EXPECT_TRUE(op_effects(b.p, b.fill(f, 1)).empty());
}

TEST(GroupEffects, MmaReadsBothOperands) {
  Builder b;
  int a = b.shared("A", 8, 8), bb = b.shared("B", 8, 8), f = b.frag("F", 8, 8);
  std::vector<MemEffect> e = op_effects(b.p, b.mma(f, ref(a), ref(bb), 8, 8, 8));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].buffer, a);
  EXPECT_EQ(e[1].buffer, bb);
  EXPECT_FALSE(e[0].write || e[1].write);
}

TEST(GroupEffects, AllGlobalBuffersAreOneAliasClass) {
  MemEffect x{0, Space::Global, nullptr, true}, y{1, Space::Global, nullptr, false};
  EXPECT_TRUE(effects_conflict(x, y));
  y.write = true;
  EXPECT_TRUE(effects_conflict(x, y));
  x.write = y.write = false;
  EXPECT_FALSE(effects_conflict(x, y));
}

TEST(GroupEffects, SharedBuffersAreDistinctAllocations) {
  EXPECT_FALSE(effects_conflict(shared_effect(0, nullptr, true), shared_effect(1, nullptr, true)));
  EXPECT_TRUE(effects_conflict(shared_effect(0, nullptr, true), shared_effect(0, nullptr, false)));
  EXPECT_FALSE(effects_conflict(MemEffect{0, Space::Global, nullptr, true}, shared_effect(0, nullptr, true)));
}

TEST(GroupEffects, VersionsAreToldApartOnlyWhenProvablyDistinct) {
  auto conflict = [](Expr a, Expr b) {
    return effects_conflict(shared_effect(0, a, true), shared_effect(0, b, false));
  };
  Expr k = s("k");
  EXPECT_FALSE(conflict(c(0), c(1)));
  EXPECT_TRUE(conflict(c(1), c(1)));
  EXPECT_FALSE(conflict(expr_mod(k, c(2)), expr_mod(k + 1, c(2))));
  EXPECT_TRUE(conflict(expr_mod(k, c(2)), expr_mod(k + 2, c(2))));     // same slot
  EXPECT_FALSE(conflict(expr_mod(k + 1, c(3)), expr_mod(k + 5, c(3))));
  EXPECT_TRUE(conflict(expr_mod(k, c(2)), expr_mod(k + 1, c(4))));     // different W
  EXPECT_TRUE(conflict(expr_mod(k, c(2)), expr_mod(s("j") + 1, c(2))));  // different X
  EXPECT_TRUE(conflict(expr_mod(k, c(2)), c(1)));                      // depends on k
  EXPECT_TRUE(conflict(k, k + 1));                                     // not rotating
  EXPECT_TRUE(conflict(nullptr, c(0)));                                // all versions
}

// Reduce: partial writes its scratch window, combine reads it, local touches only
// fragments. Elementwise ops (any of them, any operands) touch only fragments.
TEST(GroupEffects, ReduceModesAndElementwise) {
  Builder b;
  int rs = b.shared("Rs", 8, 2, 2), x = b.frag("x", 8, 8), m = b.frag("m", 8, 1);
  EwOperand source;
  source.kind = EwOperand::Kind::Frag;
  source.frag = x;
  GroupOp partial = b.op(GroupOpKind::Reduce);
  partial.reduce_mode = ReduceMode::Partial;
  partial.axis = 1;
  partial.operands = {source};
  partial.dst = ref(rs, 0, 0, c(1));
  std::vector<MemEffect> e = op_effects(b.p, partial);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].buffer, rs);
  EXPECT_TRUE(e[0].write);
  EXPECT_EQ(expr_to_string(e[0].version), "1");
  GroupOp combine = b.op(GroupOpKind::Reduce);
  combine.reduce_mode = ReduceMode::Combine;
  combine.frag = m;
  combine.src = ref(rs, 0, 0, c(1));
  combine.rows = 8;
  combine.cols = 2;
  e = op_effects(b.p, combine);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].write);
  EXPECT_TRUE(effects_conflict(op_effects(b.p, partial)[0], e[0]));
  GroupOp local = b.op(GroupOpKind::Reduce);
  local.frag = m;
  local.operands = {source};
  EXPECT_TRUE(op_effects(b.p, local).empty());
  GroupOp select = b.op(GroupOpKind::Elementwise);
  select.ew = EwOp::Select;
  select.frag = x;
  select.operands = {source, source, source};
  EXPECT_TRUE(op_effects(b.p, select).empty());
}

// Strides, offsets and transposition change which elements, never which buffer:
// global accesses stay one alias class, a transposed load reads its source.
TEST(GroupEffects, StridedGlobalWindowsAndTransposedLoads) {
  Builder b;
  int x = b.tensor("X"), y = b.tensor("Y"), s1 = b.shared("S", 8, 8), f = b.frag("F", 8, 8);
  BufferRef strided = ref(x, s("k"), c(0));
  strided.row_stride = c(1);
  strided.col_stride = s("X_cols");
  strided.offset = s("k") * 64;
  GroupOp load = b.frag_load(f, strided);
  load.transpose = true;
  std::vector<MemEffect> e = op_effects(b.p, load);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].space, Space::Global);
  EXPECT_FALSE(e[0].write);
  GroupOp store = b.frag_store(f, ref(y));
  EXPECT_TRUE(effects_conflict(e[0], op_effects(b.p, store)[0]));
  GroupOp shared_load = b.frag_load(f, ref(s1));
  shared_load.transpose = true;
  e = op_effects(b.p, shared_load);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].buffer, s1);
}

// A version that might leave [0, versions) is reported as all versions.
TEST(GroupEffects, VersionsOutsideTheSlotsCountAsAll) {
  Builder b;
  int s2 = b.shared("S", 8, 8, 2), f = b.frag("F", 8, 8);
  EXPECT_EQ(op_effects(b.p, b.frag_load(f, ref(s2, 0, 0, c(2))))[0].version, nullptr);
  EXPECT_EQ(op_effects(b.p, b.frag_load(f, ref(s2, 0, 0, expr_mod(s("k"), c(4)))))[0].version, nullptr);
  EXPECT_NE(op_effects(b.p, b.frag_load(f, ref(s2, 0, 0, expr_mod(s("k"), c(2)))))[0].version, nullptr);
}

}  // namespace
}  // namespace tessel::test
