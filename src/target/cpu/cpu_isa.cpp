#include "target/cpu/cpu_isa.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tessel/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TESSEL_X86 1
#endif

namespace tessel {
namespace {

// The x86-64 micro-architecture levels name each ISA in one flag (GCC 11+, clang
// 12+): v4 is AVX-512 F/VL/BW/DQ/CD on top of v3 (AVX2, FMA, BMI); the baseline
// x86-64 is SSE2. -mtune=native schedules for this very CPU (the cache key names
// it); 512-bit vectors are preferred where the compiler vectorizes on its own.
const CpuIsaInfo kIsas[] = {
    {CpuIsa::Sse, "sse", 4, 16, "-march=x86-64 -mtune=native"},
    {CpuIsa::Avx2, "avx2", 8, 16, "-march=x86-64-v3 -mtune=native"},
    {CpuIsa::Avx512, "avx512", 16, 32, "-march=x86-64-v4 -mtune=native -mprefer-vector-width=512"},
};

bool supports(CpuIsa isa) {
#ifdef TESSEL_X86
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::Sse: return true;
    case CpuIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::Avx512:
      return supports(CpuIsa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return isa == CpuIsa::Sse;
#endif
}

}  // namespace

const CpuIsaInfo& cpu_isa_info(CpuIsa isa) {
  for (const CpuIsaInfo& i : kIsas)
    if (i.isa == isa) return i;
  TESSEL_ASSERT(false, "unknown CpuIsa");
  return kIsas[0];
}

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = supports(CpuIsa::Avx512) ? CpuIsa::Avx512
                            : supports(CpuIsa::Avx2) ? CpuIsa::Avx2
                                                     : CpuIsa::Sse;
  return isa;
}

CpuIsa cpu_isa() {
  const char* forced = std::getenv("TESSEL_CPU_ISA");
  if (!forced || !*forced) return detected_cpu_isa();
  for (const CpuIsaInfo& i : kIsas)
    if (std::strcmp(forced, i.name) == 0) {
      if (static_cast<int>(i.isa) > static_cast<int>(detected_cpu_isa()))
        user_error(ErrorKind::InvalidArgument,
                   std::string("TESSEL_CPU_ISA=") + forced + ", but this CPU runs at most " +
                       cpu_isa_info(detected_cpu_isa()).name);
      return i.isa;
    }
  user_error(ErrorKind::InvalidArgument,
             std::string("TESSEL_CPU_ISA=") + forced + " is not one of avx512, avx2, sse");
}

int cpu_amd_family() {
  static const int family = [] {
#ifdef TESSEL_X86
    unsigned max_leaf = 0, vendor[3] = {}, a = 0, b = 0, c = 0, d = 0;
    __cpuid(0, max_leaf, vendor[0], vendor[2], vendor[1]);  // ebx, edx, ecx: "AuthenticAMD"
    if (max_leaf < 1 || std::memcmp(vendor, "AuthenticAMD", 12) != 0) return 0;
    __cpuid(1, a, b, c, d);
    const unsigned base = (a >> 8) & 0xf;
    return static_cast<int>(base == 0xf ? base + ((a >> 20) & 0xff) : base);
#else
    return 0;
#endif
  }();
  return family;
}

bool cpu_avx512_half_rate() {
  static const bool half = cpu_amd_family() == 0x19 && supports(CpuIsa::Avx512);
  return half;
}

const std::string& cpu_fingerprint() {
  static const std::string id = [] {
    std::string out;
#ifdef TESSEL_X86
    char buf[64];
    auto words = [&](unsigned leaf, unsigned sub) {
      unsigned r[4] = {};
      __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
      std::snprintf(buf, sizeof buf, "%x.%x:%08x %08x %08x %08x\n", leaf, sub, r[0], r[1], r[2], r[3]);
      out += buf;
    };
    unsigned max_leaf = 0, b = 0, c = 0, d = 0;
    __cpuid(0, max_leaf, b, c, d);  // the largest leaf and the vendor
    std::snprintf(buf, sizeof buf, "0:%08x %08x %08x %08x\n", max_leaf, b, c, d);
    out += buf;
    if (max_leaf >= 1) {
      // Signature and features; ebx holds the APIC id, which differs per core.
      unsigned a, b, c, d;
      __cpuid(1, a, b, c, d);
      std::snprintf(buf, sizeof buf, "1:%08x %08x %08x\n", a, c, d);
      out += buf;
    }
    if (max_leaf >= 7) words(7, 0);
#else
    out = "generic";
#endif
    return out;
  }();
  return id;
}

}  // namespace tessel
