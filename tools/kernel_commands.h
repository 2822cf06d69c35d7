// The CLI's commands on kernels written as text (the mlir-opt habit: golden tests
// are text in, text out):
//   tessel run KERNEL.tir --size NAME=V ... [--target sim|cpu|cuda] [--tile NAME=V ...]
//              [--workers W] [--scalar NAME=V ...] [--seed S] [--threads T] [--check] [--json]
//   tessel explain KERNEL.tir --size NAME=V ... [plan options]
//   tessel opt FILE.gir [--pass plan-barriers|pipeline=W|pipeline-async=W ...]
//   tessel sim FILE.gir --size NAME=V ... [--scalar NAME=V ...] [--seed S]
// Each returns the process exit status: 0 success, 1 a failed check (run --check)
// or races found (sim); user errors throw tessel::Error (the caller maps them to 2).
#pragma once

namespace tessel {
int run_command(int argc, char** argv);      // argv[1] == "run"
int explain_file_command(int argc, char** argv);  // argv[1] == "explain", argv[2] a .tir file
int opt_command(int argc, char** argv);      // argv[1] == "opt"
int sim_command(int argc, char** argv);      // argv[1] == "sim"
}  // namespace tessel
