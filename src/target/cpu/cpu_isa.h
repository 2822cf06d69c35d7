// The vector ISA the cpu target emits and compiles its kernels for.
//
// The widest one the CPU and the operating system support is found at run time
// (cpuid and xgetbv, through __builtin_cpu_supports): AVX-512 (F, VL, BW, DQ), else
// AVX2 with FMA, else SSE (SSE2, which every x86-64 has). TESSEL_CPU_ISA=avx512,
// avx2 or sse forces one; a name the CPU cannot run is a user error (InvalidArgument),
// since its kernels would die on an illegal instruction.
//
// The ISA decides the emitted source (the vector width and the register count the
// micro-kernel blocks for: cpu_microkernel.h) and the compiler's flags, so both
// parts of the kernel cache's key change with it.
#pragma once
#include <string>

namespace tessel {

enum class CpuIsa { Sse, Avx2, Avx512 };

struct CpuIsaInfo {
  CpuIsa isa;
  const char* name;   // as TESSEL_CPU_ISA spells it
  int lanes;          // fp32 lanes of one vector register
  int registers;      // architectural vector registers
  const char* flags;  // what the compiler is told: the ISA level and -mtune=native
};

const CpuIsaInfo& cpu_isa_info(CpuIsa isa);
// The widest ISA this CPU and OS can run.
CpuIsa detected_cpu_isa();
// TESSEL_CPU_ISA when set (checked against detected_cpu_isa), else detected_cpu_isa.
// Read on every call, so a test may switch it between compiles.
CpuIsa cpu_isa();

// AMD's family number (cpuid leaf 1, base plus extended: 0x19 Zen 3 and 4, 0x1A
// Zen 5) on an AMD CPU, else 0. Computed once.
int cpu_amd_family();

// Whether this CPU runs a 512-bit FMA as two 256-bit halves, at half the rate of its
// 256-bit ones in lanes a cycle: AMD family 19h with AVX-512 (Zen 4). Zen 5 (family
// 1Ah) and Intel's AVX-512 cores run whole 512-bit FMAs. Computed once.
bool cpu_avx512_half_rate();

// Identifies this CPU for the kernel cache (vendor, family/model/stepping and
// feature words: what -march and -mtune=native decide by), read with three cpuid
// instructions (each a VM exit under a hypervisor, several microseconds) and no
// file. Computed once.
const std::string& cpu_fingerprint();

}  // namespace tessel
