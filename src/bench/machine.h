// What a benchmark report records about where and how it ran, so that a number
// can be traced to a machine, a build and an environment.
#pragma once
#include <map>
#include <string>

namespace tessel::bench {

struct MachineInfo {
  std::string hostname, kernel, cpu_model, gpu_model;  // gpu_model "" when none
  int logical_cpus = 0;
  std::string jit_compiler;    // first line of `$CXX --version` (the cpu target's compiler)
  std::string build_compiler;  // the compiler that built this tessel
  std::string loadavg;         // /proc/loadavg: other work on the machine
  std::map<std::string, std::string> env;  // OPENBLAS_*, TESSEL_*, BLIS_*, OMP_*, CUDA_*, ..., CXX
};

MachineInfo machine_info();

// /proc/loadavg's first three fields.
std::string loadavg();

// SHA-256 of a file, hex, via sha256sum; "" when it cannot be computed.
std::string file_sha256(const std::string& path);

// The current time, UTC, ISO 8601 ("2026-11-29T20:21:00Z").
std::string utc_now();

// A duration as minutes and seconds ("3m07s"), for progress lines.
std::string duration_text(double seconds);

}  // namespace tessel::bench
