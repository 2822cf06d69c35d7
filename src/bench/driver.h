// `tessel bench`: the benchmark driver. Parses the command line, checks every
// implementation runs, executes the schedule (schedule.h) one worker process per
// measurement (worker.h), shows progress on stderr, and writes results.json,
// results.md and a GFLOP/s plot (scripts/plot_bench.py) into a new directory.
#pragma once

namespace tessel::bench {

extern const char* const kBenchUsage;

// argv[0] is "bench". Returns 0, or 1 when a measurement is invalid; a user's mistake (unknown
// implementation, existing output directory, a reference that does not run, a
// bad shape) is thrown as tessel::Error, which the CLI turns into status 2.
int run_bench_command(int argc, char** argv);

}  // namespace tessel::bench
