#include "bench/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/subprocess.h"

extern char** environ;

namespace tessel::bench {
namespace {

std::string cpuinfo_field(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "";
}

bool matters(const std::string& name) {
  for (const char* prefix : {"OPENBLAS_", "TESSEL_", "BLIS_", "OMP_", "GOMP_", "GOTO_", "CUDA_",
                             "CUBLAS_", "NVIDIA_TF32"})
    if (name.rfind(prefix, 0) == 0) return true;
  return name == "CXX";
}

}  // namespace

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string file_sha256(const std::string& path) {
  std::string line = shell_output("sha256sum " + shell_quote(path) + " 2>/dev/null");
  return line.substr(0, line.find(' '));
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string duration_text(double seconds) {
  int s = int(std::lround(std::max(0.0, seconds)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  return buf;
}

MachineInfo machine_info() {
  MachineInfo m;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.hostname = host;
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.cpu_model = cpuinfo_field("model name");
  m.logical_cpus = int(std::thread::hardware_concurrency());
  m.gpu_model = shell_output("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null");
  const char* cxx = std::getenv("CXX");
  std::string version = shell_output(shell_quote(cxx && *cxx ? cxx : "c++") + " --version 2>/dev/null");
  m.jit_compiler = version.substr(0, version.find('\n'));
#if defined(__clang__)
  m.build_compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.build_compiler = "gcc " __VERSION__;
#endif
  m.loadavg = loadavg();
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && matters(kv.substr(0, eq))) m.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return m;
}

}  // namespace tessel::bench
