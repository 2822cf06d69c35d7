// The planner's commands (docs/planner.md):
//   tessel plans KERNEL.tir --size NAME=V ... [--target T] [--threads N] [--top K]
//                [--calibration FILE] [--no-tuning-cache]
//       the legal candidates, best predicted first: predicted time, measured time
//       where the tuning cache knows it, why each lost; and the plan dispatch picks.
//   tessel tune KERNEL.tir --shapes "M=1,N=2;M=3,N=4" [--top K] [--extra R] ...
//       measures the model's top K (plus the default plan and R random others) per
//       shape and records the winner in the tuning cache.
//   tessel tune KERNEL.tir --calibrate --draws N --seed S --range LO:HI --out FILE
//       measures random candidates on random shapes and fits the cost model.
//   tessel tune KERNEL.tir --heldout N --seed S --range LO:HI --calibration FILE --out DIR
//              [--fixed-plans FILE]
//       held-out regret of the model's pick and of the default plan (JSON in DIR);
//       with --fixed-plans, those plans are measured on every shape too and each one's
//       suite total is reported beside the dispatcher's.
// Draws (--calibrate, --heldout): sizes log-uniform in [LO, HI], ragged; --align A
// rounds them up to multiples of A (in P percent of the draws with --align-share P);
// --spread product makes the product of the sizes log-uniform instead of each size;
// --small-share P draws one size (chosen at random) log-uniform in --small-range LO:HI
// (default 8:16) instead, in P percent of the draws (plan/shape_draws.h).
// Common: [--target cpu|sim|cuda] [--threads N] [--jobs J] [--rounds R] [--min-run-us U]
//         [--flush-denormals] (tune: FTZ/DAZ on the launching thread; with --threads 1)
// User errors throw tessel::Error (the caller maps them to exit status 2).
#pragma once

namespace tessel {
int plans_command(int argc, char** argv);  // argv[1] == "plans"
int tune_command(int argc, char** argv);   // argv[1] == "tune"
}  // namespace tessel
