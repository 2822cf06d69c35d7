#include "target/cuda/nvrtc_compile.h"

#include <nvrtc.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/kernel_cache.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string program_log(nvrtcProgram prog) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) return "";
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// No std::regex here: inside a Python process on the GPU machine, constructing one
// crashed (a segmentation fault in libstdc++'s regex compiler, the first CUDA call
// of the Python package), and these patterns are simple enough to read by hand.

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// NVRTC's --time file: "name, phase, value, ms" lines.
void read_phase_times(const std::string& path, NvrtcOutput* out) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    for (size_t at = 0;;) {
      size_t comma = line.find(',', at);
      f.push_back(trimmed(line.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (f.size() != 4 || f[3] != "ms" || f[2].empty() || f[2].find_first_not_of("0123456789.") != std::string::npos)
      continue;
    const double ms = std::strtod(f[2].c_str(), nullptr);
    const std::string& phase = f[1];
    if (phase.find("Frontend") != std::string::npos) out->frontend_ms = ms;
    else if (phase.find("Optimizer") != std::string::npos) out->optimizer_ms = ms;
    else if (phase.find("PTX") != std::string::npos) out->ptxas_ms = ms;
  }
}

// The first number in `log` written as prefix + digits + suffix; -1 when none.
int report_number(const std::string& log, const std::string& prefix, const std::string& suffix) {
  for (size_t at = log.find(suffix); at != std::string::npos; at = log.find(suffix, at + 1)) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(log[begin - 1]))) --begin;
    if (begin == at || begin < prefix.size() || log.compare(begin - prefix.size(), prefix.size(), prefix) != 0)
      continue;
    return std::stoi(log.substr(begin, at - begin));
  }
  return -1;
}

// sm_NN or sm_NNa.
bool valid_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return false;
  std::string digits = arch.substr(3);
  if (!digits.empty() && digits.back() == 'a') digits.pop_back();
  return !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == std::string::npos;
}

template <class T>
bool read_at(const std::string& b, uint64_t at, T* v) {
  if (at > b.size() || b.size() - at < sizeof(T)) return false;
  std::memcpy(v, b.data() + at, sizeof(T));
  return true;
}

// The cubin's own record of a kernel attribute: ELF sections named .nv.info*
// hold (format, attribute) pairs; format 4 carries a 16-bit size and a payload,
// which for per-function attributes is (function index, value). Returns -1 when
// absent or when the ELF is not as expected.
int64_t cubin_attribute(const std::string& elf, uint8_t attribute) {
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2) return -1;
  if (!read_at(elf, 0x28, &shoff) || !read_at(elf, 0x3A, &shentsize) || !read_at(elf, 0x3C, &shnum) ||
      !read_at(elf, 0x3E, &shstrndx) || shentsize < 0x28 || shstrndx >= shnum)
    return -1;
  auto section = [&](uint16_t i, uint32_t* name, uint64_t* offset, uint64_t* size) {
    uint64_t h = shoff + uint64_t{i} * shentsize;
    return read_at(elf, h, name) && read_at(elf, h + 0x18, offset) && read_at(elf, h + 0x20, size) &&
           *offset <= elf.size() && *size <= elf.size() - *offset;
  };
  uint32_t strname = 0;
  uint64_t stroff = 0, strsize = 0;
  if (!section(shstrndx, &strname, &stroff, &strsize)) return -1;
  for (uint16_t i = 0; i < shnum; ++i) {
    uint32_t name = 0;
    uint64_t off = 0, size = 0;
    if (!section(i, &name, &off, &size) || name >= strsize) continue;
    if (elf.compare(stroff + name, 8, ".nv.info") != 0) continue;
    for (uint64_t at = off; at + 2 <= off + size;) {
      uint8_t format = static_cast<uint8_t>(elf[at]), attr = static_cast<uint8_t>(elf[at + 1]);
      at += 2;
      if (format == 1) continue;                  // no value
      if (format == 2) { at += 1; continue; }     // one byte
      if (format == 3) { at += 2; continue; }     // two bytes
      if (format != 4) break;                     // unknown: stop reading this section
      uint16_t len = 0;
      uint32_t value = 0;
      if (!read_at(elf, at, &len)) break;
      if (attr == attribute && len == 8 && read_at(elf, at + 6, &value)) return value;
      at += 2 + len;
    }
  }
  return -1;
}

}  // namespace

void read_ptxas_report(NvrtcOutput* out) {
  out->registers = report_number(out->log, "Used ", " registers");
  out->spill_stores = report_number(out->log, "", " bytes spill stores");
  out->spill_loads = report_number(out->log, "", " bytes spill loads");
  out->stack_bytes = report_number(out->log, "", " bytes stack frame");
  // On the GPU machine NVRTC's log sometimes lacks ptxas's report (seen with CUDA
  // 13.0 there, never here). The cubin records the register count and the frame
  // size; a kernel with no stack frame has nothing spilled.
  if (out->registers < 0) {
    constexpr uint8_t kRegCount = 0x2f, kFrameSize = 0x11;
    out->registers = static_cast<int>(cubin_attribute(out->cubin, kRegCount));
    out->stack_bytes = static_cast<int>(cubin_attribute(out->cubin, kFrameSize));
    out->spill_stores = out->spill_loads = out->stack_bytes == 0 ? 0 : -1;
  }
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& arch) {
  if (!valid_arch(arch))
    user_error(ErrorKind::InvalidArgument, "cuda arch '" + arch + "': expected sm_NN (sm_90)");
  auto start = std::chrono::steady_clock::now();
  NvrtcOutput out;
  out.arch = arch;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), "tessel_kernel.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    user_error(ErrorKind::Compile, "nvrtc: cannot create a program");
  std::string arch_opt = "--gpu-architecture=" + arch;
  char time_path[] = "/tmp/tessel-nvrtc-time-XXXXXX";
  const int time_fd = ::mkstemp(time_path);
  if (time_fd >= 0) ::close(time_fd);
  const std::string time_opt = std::string("--time=") + time_path;
  const char* options[] = {arch_opt.c_str(), "-std=c++17", "--ptxas-options=-v", "-default-device", time_opt.c_str()};
  nvrtcResult r = nvrtcCompileProgram(prog, time_fd >= 0 ? 5 : 4, options);
  if (r == NVRTC_ERROR_INVALID_OPTION && time_fd >= 0) r = nvrtcCompileProgram(prog, 4, options);  // an NVRTC without --time
  if (time_fd >= 0) {
    read_phase_times(time_path, &out);
    ::unlink(time_path);
  }
  out.log = program_log(prog);
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    std::string path = kernel_cache_dir() + "/failed-" + hex64(fnv1a64(source)) + ".cu";
    write_file_atomic(path, source);
    user_error(ErrorKind::Compile, std::string("nvrtc (") + nvrtcGetErrorString(r) + ") for " + arch +
                                       ":\n" + out.log + "\nsource: " + path +
                                       "\nreproduce: nvcc -arch=" + arch + " -cubin -Xptxas -v " + path);
  }
  size_t n = 0;
  nvrtcGetCUBINSize(prog, &n);
  out.cubin.resize(n);
  nvrtcGetCUBIN(prog, out.cubin.data());
  if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS) {
    out.ptx.resize(n);
    nvrtcGetPTX(prog, out.ptx.data());
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  nvrtcDestroyProgram(&prog);
  read_ptxas_report(&out);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (std::getenv("TESSEL_PASS_TIMING"))
    std::fprintf(stderr, "tessel: %-14s %8.3f ms (front end %.0f, nvvm optimizer %.0f, ptxas %.0f)\n", "nvrtc",
                 out.compile_ms, out.frontend_ms, out.optimizer_ms, out.ptxas_ms);
  return out;
}

}  // namespace tessel
