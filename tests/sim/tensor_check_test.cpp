// Launch-time tensor checks (runtime/tensor_check.h), shared by every target.
#include "runtime/tensor_check.h"

#include <gtest/gtest.h>

#include "tessel/error.h"

namespace tessel {
namespace {

Expr s(const char* name) { return expr_sym(name); }
Expr c(int64_t v) { return expr_const(v); }

TensorParam tensor(std::vector<Expr> shape, std::vector<Expr> strides, Access access) {
  return TensorParam{"T", DType::F32, std::move(shape), std::move(strides), access};
}

std::string error(const TensorParam& t, const std::map<std::string, int64_t>& sizes) {
  try {
    check_tensor(t, sizes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

TEST(TensorCheck, EvaluatesShapeStridesAndTheElementsThePointerHolds) {
  // A batch of row-major matrices with padded rows and a padded batch stride.
  TensorLayout l = check_tensor(tensor({s("B"), s("M"), s("N")}, {s("sb"), s("ld"), c(1)}, Access::Out),
                                {{"B", 3}, {"M", 4}, {"N", 5}, {"ld", 7}, {"sb", 30}});
  EXPECT_EQ(l.shape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(l.strides, (std::vector<int64_t>{30, 7, 1}));
  EXPECT_EQ(l.elements, 2 * 30 + 3 * 7 + 4 + 1);
  // A transposed view (column-major storage) is fine to write.
  EXPECT_EQ(check_tensor(tensor({s("M"), s("N")}, {c(1), s("M")}, Access::Out), {{"M", 4}, {"N", 5}})
                .elements,
            20);
  // No element: nothing to hold.
  EXPECT_EQ(check_tensor(tensor({s("M"), s("N")}, {s("N"), c(1)}, Access::Out), {{"M", 0}, {"N", 5}})
                .elements,
            0);
}

TEST(TensorCheck, BroadcastViewsAreForReadOnlyTensors) {
  TensorParam bias = tensor({s("M"), s("N")}, {c(0), c(1)}, Access::In);
  EXPECT_EQ(check_tensor(bias, {{"M", 4}, {"N", 5}}).elements, 5);
  bias.access = Access::InOut;
  EXPECT_EQ(error(bias, {{"M", 4}, {"N", 5}}),
            "tensor 'T': it is written (inout) but stride of dim 0 (0) is 0 with extent 4: its "
            "elements would share addresses");
  // Extent 1 along the zero stride: one element per address, fine.
  EXPECT_EQ(error(bias, {{"M", 1}, {"N", 5}}), "");
}

TEST(TensorCheck, OverlappingWrittenTensorIsRefused) {
  TensorParam t = tensor({s("M"), s("N")}, {s("ld"), c(1)}, Access::Out);
  EXPECT_EQ(error(t, {{"M", 4}, {"N", 5}, {"ld", 5}}), "");
  EXPECT_EQ(error(t, {{"M", 4}, {"N", 5}, {"ld", 4}}),
            "tensor 'T': it is written (out) but its elements overlap: stride of dim 0 (ld) is 4, "
            "less than dim 1's stride 1 times its extent 5");
  // Sorted by stride, whatever the order of the dims.
  TensorParam u = tensor({s("A"), s("B"), s("C")}, {c(1), c(12), c(3)}, Access::Out);
  EXPECT_EQ(error(u, {{"A", 3}, {"B", 2}, {"C", 4}}), "");
  EXPECT_EQ(error(u, {{"A", 3}, {"B", 2}, {"C", 5}}),
            "tensor 'T': it is written (out) but its elements overlap: stride of dim 1 (12) is 12, "
            "less than dim 2's stride 3 times its extent 5");
  // Read-only, the same overlap is a legal view.
  u.access = Access::In;
  EXPECT_EQ(error(u, {{"A", 3}, {"B", 2}, {"C", 5}}), "");
}

TEST(TensorCheck, NegativeMissingAndOverflowingAreRefused) {
  EXPECT_EQ(error(tensor({s("M") - s("N")}, {c(1)}, Access::In), {{"M", 2}, {"N", 5}}),
            "tensor 'T': extent of dim 0 ((M - N)) is -3, negative");
  EXPECT_EQ(error(tensor({s("M"), s("N")}, {s("N") - s("M"), c(1)}, Access::In), {{"M", 7}, {"N", 5}}),
            "tensor 'T': stride of dim 0 ((N - M)) is -2, negative");
  EXPECT_EQ(error(tensor({s("M"), s("N")}, {s("ld"), c(1)}, Access::In), {{"M", 7}, {"N", 5}}),
            "tensor 'T': missing size parameter 'ld' (in the stride of dim 0: ld)");
  EXPECT_EQ(error(tensor({s("M"), s("N")}, {s("ld"), c(1)}, Access::In),
                  {{"M", int64_t{1} << 40}, {"N", 5}, {"ld", int64_t{1} << 40}}),
            "tensor 'T': the offset of its last element overflows 64 bits (dim 0: extent "
            "1099511627776, stride 1099511627776)");
}

}  // namespace
}  // namespace tessel
