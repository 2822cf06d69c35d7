// Memory-bound GroupIR programs on the cuda target (fma atom): row softmax and
// layernorm, fp32 and bf16, at the issue's shapes, each over a few worker grids
// and tilings, as GB/s (bytes read and written once / device time). These are the
// programs the lowering produces for one row block per group (a single column
// tile held in registers, or a loop over column tiles with an online max and sum);
// the point is what the emitter makes of each shape of part. The first row of each
// group is the library's kernel (kernels/*.tir) with its default cuda plan. Every
// run checks 64 rows of its output against an FP64 computation first.
//   bench_cuda_ops [--rounds N] [--shapes 8192x8192,32768x1024,4096x50257] [--compile-only]
//                  [--library-only]   (only the library's kernels with their default plans)
// (--compile-only: NVRTC for sm_90 and the register counts, no GPU needed.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fstream>
#include <map>
#include <sstream>

#include "ir/group_text.h"
#include "ir/tile_text.h"
#include "tessel/tessel.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

struct Variant {
  std::string kernel;  // softmax | layernorm
  std::string dtype;   // f32 | bf16
  int64_t br, bc;      // row block, column tile
  int wr, wc;          // worker grid
  bool online;         // loop over column tiles (else one tile of bc >= N)
  bool library = false;  // the library's kernel with its default plan (the rest unused)
  std::string name() const {
    return kernel + " " + dtype + " " + num(br) + "x" + num(bc) + " w" + num(wr) + "x" + num(wc) +
           (online ? " loop" : " tile");
  }
};

// Reduce along the rows of `src` (BR x BC) into `dst` (BR x 1): local when one
// worker holds a whole row, else partial / fence / combine through Rs.
std::string row_reduce(const Variant& v, const char* op, const std::string& dst, const std::string& src, int* id) {
  if (v.wc == 1) return "  reduce." + std::string(op) + " #" + num((*id)++) + " " + dst + " = " + src + " axis 1\n";
  std::string s = "  reduce." + std::string(op) + " #" + num((*id)++) + " Rs[0, 0] <- " + src + " axis 1 partial\n";
  s += "  fence #" + num((*id)++) + "\n";
  s += "  reduce." + std::string(op) + " #" + num((*id)++) + " " + dst + " <- Rs[0, 0] axis 1 combine " + num(v.br) +
       "x" + num(v.wc) + "\n";
  return s + "  fence #" + num((*id)++) + "\n";
}

std::string header(const Variant& v, const std::string& tensors, const std::string& scalars,
                   const std::vector<std::string>& frags1, const std::vector<std::string>& frags_row) {
  const std::string T = v.dtype;
  std::string s = "group " + v.kernel + "(sizes M, N, ld; tensors " + tensors + "; scalars" + scalars + ") {\n";
  s += "  grid i = ceildiv(M, " + num(v.br) + ")\n";
  s += "  workers " + num(v.wr * v.wc) + " grid " + num(v.wr) + "x" + num(v.wc) + " lanes 1\n  atom fma 1x1\n";
  for (const char* t : {"X", "Y", "G", "Bt"})
    if (tensors.find(std::string(t) + ":") != std::string::npos)
      s += std::string("  buffer ") + t + ": global " + (t[0] == 'G' || t[0] == 'B' ? "f32" : T) + " tensor " + t + "\n";
  if (v.wc > 1) s += "  buffer Rs: shared f32[" + num(v.br) + ", " + num(v.wc) + "] row panel 1 versions 1\n";
  for (const std::string& f : frags_row)
    s += "  buffer " + f + ": private f32[" + num(v.br) + ", " + num(v.bc) + "] row panel 1 versions 1\n";
  for (const std::string& f : frags1)
    s += "  buffer " + f + ": private f32[" + num(v.br) + ", 1] row panel 1 versions 1\n";
  return s;
}

std::string softmax_gir(const Variant& v) {
  const std::string T = v.dtype, tile = "X[(i * " + num(v.br) + "), ";
  std::string s = header(v, "X: " + T + "[M, N] strides(ld, 1) in, Y: " + T + "[M, N] strides(ld, 1) out", "",
                         {"m", "s", "t", "mn", "u"}, {"x"});
  int id = 0;
  auto ew = [&](const std::string& text) { return "  ew #" + num(id++) + " " + text + "\n"; };
  std::string col = v.online ? "(k * " + num(v.bc) + ")" : "0";
  std::string load = "frag.load #@ x <- X[(i * " + num(v.br) + "), " + col + "] strides(ld, 1)";
  std::string store = "frag.store #@ Y[(i * " + num(v.br) + "), " + col + "] strides(ld, 1) <- x guard dst(M, N)\n";
  auto with_id = [&](std::string t) { return "  " + t.replace(t.find('@'), 1, num(id++)); };
  if (!v.online) {
    s += with_id(load + " pad -inf guard src(M, N)\n");
    s += row_reduce(v, "max", "m", "x", &id);
    s += ew("x = sub x, m") + ew("x = exp x");
    s += row_reduce(v, "sum", "s", "x", &id);
    s += ew("x = div x, s") + with_id(store);
  } else {
    s += "  frag.fill #" + num(id++) + " m = -inf\n";
    s += "  frag.fill #" + num(id++) + " s = 0\n";
    s += "  for #" + num(id++) + " k = 0 to ceildiv(N, " + num(v.bc) + ") {\n";
    s += with_id(load + " pad -inf guard src(M, N)\n");
    s += row_reduce(v, "max", "t", "x", &id);
    s += ew("mn = max m, t") + ew("x = sub x, mn") + ew("x = exp x");
    s += row_reduce(v, "sum", "u", "x", &id);
    s += ew("t = sub m, mn") + ew("t = exp t") + ew("s = mul s, t") + ew("s = add s, u") + ew("m = copy mn");
    s += "  }\n  for #" + num(id++) + " k = 0 to ceildiv(N, " + num(v.bc) + ") {\n";
    s += with_id(load + " guard src(M, N)\n");
    s += ew("x = sub x, m") + ew("x = exp x") + ew("x = div x, s") + with_id(store) + "  }\n";
  }
  (void)tile;
  return s + "}\n";
}

// Layernorm with gamma and beta (f32, rank 1). One tile: mean, then the variance
// of the centred (masked) values. Loop: sum and sum of squares in one pass.
std::string layernorm_gir(const Variant& v) {
  const std::string T = v.dtype;
  std::string s = header(v,
                         "X: " + T + "[M, N] strides(ld, 1) in, G: f32[N] strides(1) in, Bt: f32[N] strides(1) in, Y: " +
                             T + "[M, N] strides(ld, 1) out",
                         " eps: f32", {"mu", "rs", "t"}, {"x", "c"});
  s += "  buffer g: private f32[1, " + num(v.bc) + "] row panel 1 versions 1\n";
  s += "  buffer b: private f32[1, " + num(v.bc) + "] row panel 1 versions 1\n";
  int id = 0;
  auto ew = [&](const std::string& text) { return "  ew #" + num(id++) + " " + text + "\n"; };
  auto op = [&](const std::string& kind, const std::string& rest) { return "  " + kind + " #" + num(id++) + " " + rest + "\n"; };
  std::string col = v.online ? "(k * " + num(v.bc) + ")" : "0";
  std::string xload = "x <- X[(i * " + num(v.br) + "), " + col + "] strides(ld, 1) guard src(M, N)";
  std::string gload = "g <- G[0, " + col + "] strides(0, 1) guard src(1, N)";
  std::string bload = "b <- Bt[0, " + col + "] strides(0, 1) guard src(1, N)";
  std::string store = "Y[(i * " + num(v.br) + "), " + col + "] strides(ld, 1) <- x guard dst(M, N)";
  auto normalize = [&] {
    return op("frag.load", gload) + op("frag.load", bload) + ew("x = sub x, mu") + ew("x = mul x, rs") +
           ew("x = mul x, g") + ew("x = add x, b") + op("frag.store", store);
  };
  if (!v.online) {
    s += op("frag.load", xload);
    s += row_reduce(v, "sum", "mu", "x", &id) + ew("mu = div mu, #(N)");
    s += ew("c = index axis 1") + ew("c = cmp.lt c, #(N)") + ew("x = sub x, mu") + ew("x = select c, x, 0");
    s += ew("c = mul x, x") + row_reduce(v, "sum", "rs", "c", &id);
    s += ew("rs = div rs, #(N)") + ew("rs = add rs, $eps") + ew("rs = rsqrt rs");
    s += op("frag.load", gload) + op("frag.load", bload) + ew("x = mul x, rs") + ew("x = mul x, g") +
         ew("x = add x, b") + op("frag.store", store);
  } else {
    s += op("frag.fill", "mu = 0") + op("frag.fill", "rs = 0");
    s += "  for #" + num(id++) + " k = 0 to ceildiv(N, " + num(v.bc) + ") {\n";
    s += op("frag.load", xload) + row_reduce(v, "sum", "t", "x", &id) + ew("mu = add mu, t");
    s += ew("c = mul x, x") + row_reduce(v, "sum", "t", "c", &id) + ew("rs = add rs, t") + "  }\n";
    s += ew("mu = div mu, #(N)") + ew("rs = div rs, #(N)") + ew("t = mul mu, mu") + ew("rs = sub rs, t") +
         ew("rs = add rs, $eps") + ew("rs = rsqrt rs");
    s += "  for #" + num(id++) + " k = 0 to ceildiv(N, " + num(v.bc) + ") {\n" + op("frag.load", xload) + normalize() +
         "  }\n";
  }
  return s + "}\n";
}

uint16_t bf16_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}
float bf16_value(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

struct Shape {
  int64_t m, n;
};

// Worst relative error of `rows` sampled rows against FP64 (inputs as stored).
double check_rows(const Variant& v, const Shape& s, const std::vector<float>& x, const std::vector<float>& g,
                  const std::vector<float>& b, const std::vector<float>& y) {
  double worst = 0;
  for (int64_t k = 0; k < 64; ++k) {
    int64_t r = (k * 7919) % s.m;
    const float* xr = &x[r * s.n];
    std::vector<double> want(s.n);
    if (v.kernel == "softmax") {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.n; ++j) m = std::max(m, double(xr[j]));
      for (int64_t j = 0; j < s.n; ++j) sum += std::exp(xr[j] - m);
      for (int64_t j = 0; j < s.n; ++j) want[j] = std::exp(xr[j] - m) / sum;
    } else {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < s.n; ++j) mu += xr[j];
      mu /= s.n;
      for (int64_t j = 0; j < s.n; ++j) var += (xr[j] - mu) * (xr[j] - mu);
      double rstd = 1 / std::sqrt(var / s.n + 1e-5);
      for (int64_t j = 0; j < s.n; ++j) want[j] = (xr[j] - mu) * rstd * g[j] + b[j];
    }
    double scale = 0;
    for (double w : want) scale = std::max(scale, std::fabs(w));
    for (int64_t j = 0; j < s.n; ++j) {
      double e = std::fabs(y[r * s.n + j] - want[j]) / scale;
      if (!(e <= worst)) worst = e;  // NaN sticks
    }
  }
  return worst;
}

// The library's kernel (kernels/<name>.tir, X and Y retyped for bf16) through the
// whole pipeline with its default cuda plan: the GroupIR the lowering makes.
GroupProgram library_program(const Variant& v, const Shape& s, std::string* plan) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/kernels/" + v.kernel + ".tir");
  std::stringstream text;
  text << in.rdbuf();
  std::string t = text.str();
  if (v.dtype == "bf16")
    for (const char* name : {"X: f32", "Y: f32"}) t.replace(t.find(name), 6, std::string(name).substr(0, 3) + "bf16");
  TileKernel k = parse_tile_kernel(t);
  std::map<std::string, int64_t> sizes = {{"M", s.m}, {"N", s.n}, {"ldx", s.n}, {"ldy", s.n}};
  Plan p = default_plan(k, TargetKind::Cuda, sizes);
  *plan = p.to_string();
  return compile(k, p).program();
}

void run(const Variant& v, const Shape& s, int rounds, bool compile_only) {
  std::shared_ptr<const CudaKernel> kernel;
  std::string name = v.name();
  try {
    GroupProgram program;
    if (v.library) {
      std::string plan;
      program = library_program(v, s, &plan);
      name = v.kernel + " " + v.dtype + " library (" + plan + ")";
    } else {
      program = parse_group_program(v.kernel == "softmax" ? softmax_gir(v) : layernorm_gir(v));
    }
    kernel = compile_cuda(program, compile_only ? "sm_90" : "");
  } catch (const Error& e) {
    std::printf("| %s | %ldx%ld | compile error: %s |\n", name.c_str(), (long)s.m, (long)s.n, e.what());
    return;
  }
  if (compile_only) {
    std::printf("| %s | %ldx%ld | %d regs, %d B spilled |\n", name.c_str(), (long)s.m, (long)s.n,
                kernel->info().nvrtc.registers, kernel->info().nvrtc.spill_stores);
    return;
  }
  const bool half = v.dtype == "bf16";
  const int eb = half ? 2 : 4;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<float> x(s.m * s.n), g(s.n), b(s.n), y(s.m * s.n);
  std::vector<uint16_t> xh, yh;
  for (float& f : x) f = dist(rng);
  for (float& f : g) f = dist(rng);
  for (float& f : b) f = dist(rng);
  if (half) {
    xh.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) xh[i] = bf16_bits(x[i]), x[i] = bf16_value(xh[i]);
  }
  DeviceBuffer dx(x.size() * eb), dy(y.size() * eb), dg(g.size() * 4), db(b.size() * 4);
  dx.upload(half ? static_cast<const void*>(xh.data()) : x.data(), x.size() * eb);
  dg.upload(g.data(), g.size() * 4);
  db.upload(b.data(), b.size() * 4);
  dy.fill32(0x7fc07fc0u);  // NaN in either dtype
  LaunchArgs args;
  args.sizes = {{"M", s.m}, {"N", s.n}, {"ld", s.n}, {"ldx", s.n}, {"ldy", s.n}};
  args.scalars = {{"eps", 1e-5}};
  args.tensors = {{"X", static_cast<float*>(dx.get())}, {"Y", static_cast<float*>(dy.get())},
                  {"G", static_cast<float*>(dg.get())}, {"Bt", static_cast<float*>(db.get())}};
  if (v.library && v.kernel == "layernorm") {
    args.tensors.erase("G"), args.tensors.erase("Bt");
    args.tensors["gamma"] = static_cast<float*>(dg.get()), args.tensors["beta"] = static_cast<float*>(db.get());
  }
  kernel->launch(args);
  cuda_synchronize();
  if (half) {
    yh.resize(y.size());
    dy.download(yh.data(), yh.size() * 2);
    for (size_t i = 0; i < y.size(); ++i) y[i] = bf16_value(yh[i]);
  } else {
    dy.download(y.data(), y.size() * 4);
  }
  double err = check_rows(v, s, x, g, b, y);
  double bound = half ? 1e-2 : 1e-5;
  DeviceTimer timer;
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    timer.start();
    for (int k = 0; k < 10; ++k) kernel->launch(args);
    us.push_back(timer.stop_ms() * 100);  // per launch, us
  }
  std::sort(us.begin(), us.end());
  double t = us[us.size() / 2];
  double bytes = 2.0 * s.m * s.n * eb + (v.kernel == "layernorm" ? 8.0 * s.n : 0);
  const NvrtcOutput& o = kernel->info().nvrtc;
  std::printf("| %s | %ldx%ld | %.1f | %.0f | %d | %d | %.2g%s |\n", name.c_str(), (long)s.m, (long)s.n, t,
              bytes / t / 1e3, o.registers, o.spill_stores, err, err <= bound ? "" : " CHECK FAILED");
  std::fflush(stdout);
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
  using namespace tessel;
  int rounds = 5;
  bool compile_only = false, library_only = false;
  std::vector<Shape> shapes = {{8192, 8192}, {32768, 1024}, {4096, 50257}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--compile-only") {
      compile_only = true;
    } else if (a == "--library-only") {
      library_only = true;
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--shapes" && i + 1 < argc) {
      shapes.clear();
      for (std::string list = argv[++i]; !list.empty();) {
        size_t comma = list.find(',');
        std::string one = list.substr(0, comma);
        shapes.push_back({std::atoll(one.c_str()), std::atoll(one.substr(one.find('x') + 1).c_str())});
        list = comma == std::string::npos ? "" : list.substr(comma + 1);
      }
    } else {
      std::fprintf(stderr, "usage: bench_cuda_ops [--rounds N] [--shapes MxN,...] [--compile-only] [--library-only]\n");
      return 2;
    }
  }
  std::string why;
  if (!compile_only && !cuda_gpu_available(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 2;
  }
  std::printf("| variant | shape | us | GB/s | regs | spill B | max rel err |\n|---|---|---:|---:|---:|---:|---:|\n");
  for (const Shape& s : shapes)
    for (const char* kernel : {"softmax", "layernorm"})
      for (const char* dtype : {"f32", "bf16"}) {
        std::vector<Variant> vs = {{kernel, dtype, 0, 0, 0, 0, false, true}};
        if (library_only) {
          run(vs[0], s, rounds, compile_only);
          continue;
        }
        auto add = [&](int64_t br, int64_t bc, int wr, int wc, bool online) {
          vs.push_back({kernel, dtype, br, bc, wr, wc, online});
        };
        // One tile of the whole row: parts of 8 to 64 columns a thread.
        for (int wc : {256, 512, 1024}) {
          int64_t bc = (s.n + wc - 1) / wc * wc;
          int64_t per = bc / wc;
          if (per <= 64) add(1, bc, 1, wc, false);
        }
        // Several rows a group for short rows.
        if (s.n <= 2048) add(4, (s.n + 63) / 64 * 64, 4, 64, false), add(2, (s.n + 127) / 128 * 128, 2, 128, false);
        // A warp a row (the combine is one read and lane shuffles).
        if (s.n <= 1024) add(8, (s.n + 31) / 32 * 32, 8, 32, false), add(4, (s.n + 31) / 32 * 32, 4, 32, false);
        // Loops over column tiles: 4 or 8 columns a thread.
        add(1, 1024, 1, 256, true);
        add(1, 2048, 1, 256, true);
        add(1, 4096, 1, 512, true);
        for (const Variant& v : vs) run(v, s, rounds, compile_only);
      }
  return 0;
}
