// `tessel bench --plan SPEC` over the default plan (src/bench/plan_spec.h).
#include <gtest/gtest.h>

#include "bench/plan_spec.h"
#include "ops/gemm.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

Plan default_bf16() { return default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90"); }

TEST(PlanSpec, ThreadCopiesDropTheDefaultsProducers) {
  Plan p = default_bf16();
  ASSERT_TRUE(p.tma);
  ASSERT_EQ(p.producers, 1);
  apply_plan_spec("tile=128x128x64,workers=2,window=3,copy=async", p);
  EXPECT_FALSE(p.tma);
  EXPECT_TRUE(p.async_copy);
  EXPECT_EQ(p.producers, 0);
  EXPECT_EQ(p.window, 3);
  EXPECT_EQ(p.tile("BN"), 128);
  validate_plan(p);
}

TEST(PlanSpec, TmaPlansKeepTheirProducersAndAskedOnesStay) {
  Plan p = default_bf16();
  apply_plan_spec("tile=128x128x64", p);
  EXPECT_EQ(p.producers, 1);
  Plan q = default_bf16();
  apply_plan_spec("copy=sync,producers=1", q);
  EXPECT_EQ(q.producers, 1);
  try {
    validate_plan(q);
    ADD_FAILURE() << "accepted " << q.to_string();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Plan);
  }
}

TEST(PlanSpec, WorkerGridsFragmentSetsAndBatches) {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::F32, "sm_90");
  apply_plan_spec("tile=128x128x32,grid=8x32,frag=2,batch=8", p);
  EXPECT_EQ(p.workers, 256);
  EXPECT_EQ(p.worker_rows, 8);
  EXPECT_EQ(p.worker_cols, 32);
  EXPECT_EQ(p.frag_buffers, 2);
  EXPECT_EQ(p.copy_batch, 8);
  validate_plan(p);
}

TEST(PlanSpec, MalformedSpecsAreInvalidArguments) {
  for (const char* spec : {"window", "colour=red", "copy=dma", "workers=-1", "tile=1x2", "grid=16", "grid=0x4",
                           "frag=x"}) {
    Plan p = default_bf16();
    try {
      apply_plan_spec(spec, p);
      ADD_FAILURE() << "accepted " << spec;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << spec;
    }
  }
}

}  // namespace
}  // namespace tessel::bench
