// The benchmark's worker: one implementation on one shape, in a process of its
// own (`tessel bench-worker ...`), so that every measurement starts cold (fresh
// process, fresh kernel cache chosen by the driver) and OpenBLAS and BLIS never
// share a process. The driver runs the current executable for in-process
// implementations and the --reference executable for a frozen tessel build; both
// speak this protocol.
//
// A worker: makes random inputs and the FP64 oracle
// (alpha = 1, beta = 0); loads the implementation (gemm_impl.h) and poisons C
// with NaN; times the first call (the cold cost: capture, planning, JIT compile
// and first launch for tessel); checks the complete output; warms up for
// warmup_ms; times `samples` batches of about sample_ms each (host wall per call,
// amortized over the batch; device-event time too on a GPU; and the process's
// CPU time over wall time, which shows when other work took the CPU); poisons C again,
// calls once more and checks the complete output again. It prints one JSON line
// on stdout (see worker.cpp for the fields) and exits 0, also when the output is
// wrong (then "valid" is false); a bad request is a user error (exit 2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/shape.h"

namespace tessel::bench {

struct WorkerRequest {
  std::string impl = "tessel";  // tessel | openblas | blis | libxsmm | tessel-cuda | cublas
  Shape shape{8, 8, 8};
  double warmup_ms = 200;
  int samples = 9;
  double sample_ms = 40;
  int threads = 1;    // 0 = all cores
  std::string tile;   // tessel: a named plan BMxBNxBK; empty = the front door's dispatch
  uint64_t seed = 1;  // random inputs
  std::string dtype = "fp32";  // cuda: A and B rounded to and stored in this precision's type
  std::string plan;            // tessel: a plan spec (bench/plan_spec.h)
  double beta = 0;             // C = A B + beta C; beta != 0: C starts random, not NaN
  // Where FP64 oracles are kept between workers ("" = compute every time): the
  // oracle of a large shape costs far more than its measurement.
  std::string oracle_dir;
};

// The command-line arguments that ask a worker for `request`, starting with
// "bench-worker".
std::vector<std::string> worker_args(const WorkerRequest& request);

// `tessel bench-worker ...`: argv[0] is "bench-worker". Returns the exit status.
int run_bench_worker(int argc, char** argv);

}  // namespace tessel::bench
