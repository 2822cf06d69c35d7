// `tessel bench --op attention`: the library's fused attention (src/ops/attention.cpp,
// the same kernels as kernels/attention*.tir) beside PyTorch's
// scaled_dot_product_attention, in one run of interleaved rounds.
//
// Each measurement is a process of its own: tessel through `tessel run` (the
// kernel's text written into the output directory, a warm launch's median over
// --repeat launches: device time on cuda, host wall on the cpu), PyTorch through a
// small Python worker (the same statistic over as many calls: CUDA events on cuda,
// a clock on the cpu). Rounds order the cases and implementations as the GEMM
// benchmark does (schedule.h). Before any timing, each kernel runs once with
// `--check` (the complete O against the FP64 evaluator, NaN-poisoned first) at a
// small ragged shape; a kernel that fails it stops the run.
#pragma once

namespace tessel::bench {

extern const char* const kAttentionBenchUsage;

// argv[0] is "bench" and argv holds "--op attention". Returns 0, or 1 when a
// measurement of tessel failed; user mistakes (options, shapes, a PyTorch that is
// not importable when a torch implementation is asked for) are thrown as
// tessel::Error.
int run_attention_bench(int argc, char** argv);

}  // namespace tessel::bench
