// Extreme numbers at every entry point of the public API: the TileIR and GroupIR
// parsers and verifiers, run_sim, default_plan, compile and Kernel::launch. Only
// tessel::Error may come out (never std::bad_alloc, std::length_error or another
// foreign exception), and the resource bounds that refuse them carry the numbers.
// The text entry points are fed every integer of a small valid program replaced in
// turn by each extreme value (huge ids, workers, sizes, negative sizes, 2^62 ...).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "target/sim/sim.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

const std::vector<std::string> kExtremes = {
    "0",          "-1",         "2000000000",          "2147483647",          "2147483648",
    "-2147483648", "4294967296", "4611686018427387904", "9223372036854775807", "-9223372036854775808",
    "99999999999999999999"};
const std::vector<int64_t> kExtremeInts = {
    0, -1, 2000000000, 2147483647, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62,
    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};

// What the body threw: "" for nothing or a tessel::Error, else a description.
std::string foreign_exception(const std::function<void()>& body, std::string* error = nullptr) {
  try {
    body();
  } catch (const Error& e) {
    if (error) *error = e.what();
  } catch (const std::exception& e) {
    return std::string("a foreign exception: ") + typeid(e).name() + ": " + e.what();
  } catch (...) {
    return "a foreign exception of unknown type";
  }
  return "";
}

// Every integer literal of `text` (not part of a name), as [start, length).
std::vector<std::pair<size_t, size_t>> integers(const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    size_t at = static_cast<size_t>(it->position());
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_' ||
                   text[at - 1] == '.'))
      continue;
    out.push_back({at, static_cast<size_t>(it->length())});
  }
  return out;
}

// A GroupIR program with most kinds of numbers: ids, workers, grid, lanes, atom,
// buffer extents, panels, versions, copy extents and batches, offsets, strides,
// pendings, loop bounds, mma extents, constants. Its grid and loops are constant
// and small, so no mutation can make the sim run long.
const char* kGroup = R"(group g(sizes M; tensors X: f32[M, 8] strides(8, 1) inout; scalars s: f32) {
  grid i = 2
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: shared f32[8, 8] row panel 1 versions 2
  buffer P: shared f32[8, 8] colpanels panel 2 versions 1
  buffer f: private f32[8, 8] row panel 1 versions 1
  buffer r: private f32[8, 1] row panel 1 versions 1
  buffer R: shared f32[8, 2] row panel 1 versions 1
  frag.fill #0 f = 0
  for #1 k = 0 to 2 {
    copy #2 X[(i * 4), 0] strides(8, 1) -> S@(k % 2)[0, 0] 4x8 batch 4 async guard src(M, 8)
    async.commit #3
    async.wait #4 pending 0
    copy #5 S@(k % 2)[0, 0] -> P[0, 0] 8x8 batch 2
    fence #6
    mma #7 f += S@(k % 2)[0, 0] * P[0, 0] 8x8x8
    fence #8
  }
  reduce.sum #9 R[0, 0] <- f axis 1 partial
  fence #10
  reduce.sum #11 r <- R[0, 0] axis 1 combine 8x2
  frag.store #12 X[(i * 4), 0] strides(8, 1) <- f guard dst(M, 8)
}
)";

TEST(ExtremeValues, GroupIrTextParserVerifierAndSim) {
  // The base program is valid and runs.
  std::vector<float> x(16 * 8, 1.0f);
  LaunchArgs args;
  args.sizes = {{"M", 16}};
  args.scalars = {{"s", 1.0}};
  args.tensors = {{"X", x.data()}};
  ASSERT_EQ(foreign_exception([&] {
              GroupProgram p = parse_group_program(kGroup);
              verify_group_program(p);
              run_sim(p, args);
            }),
            "");
  const std::string base = kGroup;
  int tried = 0, refused = 0;
  for (auto [at, length] : integers(base))
    for (const std::string& value : kExtremes) {
      std::string text = base;
      text.replace(at, length, value);
      std::fill(x.begin(), x.end(), 1.0f);
      std::string error;
      std::string foreign = foreign_exception(
          [&] {
            GroupProgram p = parse_group_program(text);
            verify_group_program(p);
            for (TargetKind t : {TargetKind::Sim, TargetKind::Cpu, TargetKind::Cuda}) verify_group_limits(p, t);
          },
          &error);
      std::string sim = foreign_exception([&] { run_sim(parse_group_program(text), args); });
      ++tried;
      refused += !error.empty();
      EXPECT_EQ(foreign, "") << "number at " << at << " -> " << value << "\n" << text;
      EXPECT_EQ(sim, "") << "number at " << at << " -> " << value << "\n" << text;
    }
  EXPECT_GT(tried, 300);
  EXPECT_GT(refused, tried / 3);
}

// The issue's two: op id 2000000000 and workers 2000000000 reach typed errors with
// the numbers (the sim used to throw std::bad_alloc).
TEST(ExtremeValues, HugeOpIdAndWorkersAreVerifyErrorsWithTheNumbers) {
  std::string ids = std::regex_replace(std::string(kGroup), std::regex("#12 "), "#2000000000 ");
  std::string workers = std::regex_replace(std::string(kGroup), std::regex("workers 4"), "workers 2000000000");
  // The verifier's message, then run_sim's (which verifies the program itself).
  struct Case {
    std::string text, verifier, sim;
  };
  for (const Case& c : {Case{ids, "next_op_id 2000000001 out of range [0, 1048576]",
                             "next_op_id 2000000001 out of range [0, 1048576]"},
                        Case{workers, "workers 2000000000 out of range [1, 1024]",
                             "workers 2000000000 out of range [1, 1024]"}}) {
    GroupProgram p = parse_group_program(c.text);
    for (int pass = 0; pass < 2; ++pass) {
      try {
        if (pass == 0) verify_group_program(p);
        else run_sim(p, LaunchArgs{});
        ADD_FAILURE() << "accepted:\n" << c.text;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
        EXPECT_NE(std::string(e.what()).find(pass == 0 ? c.verifier : c.sim), std::string::npos) << e.what();
      }
    }
  }
}

// Per-target buffer bounds carry the numbers: a 128 x 512 f32 staging buffer with 2
// versions is 512 KiB (524608 bytes with the other two), over the H200's 227 KiB of shared memory per block, fine on
// the cpu, and 131072 elements, fine on the sim.
TEST(ExtremeValues, TargetBufferBoundsCarryTheNumbers) {
  std::string text = std::regex_replace(std::string(kGroup), std::regex("buffer S: shared f32\\[8, 8\\]"),
                                        "buffer S: shared f32[128, 512]");
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  verify_group_limits(p, TargetKind::Cpu);
  verify_group_limits(p, TargetKind::Sim);
  try {
    verify_group_limits(p, TargetKind::Cuda);
    ADD_FAILURE() << "512 KiB of shared memory accepted on cuda";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Plan);
    EXPECT_NE(std::string(e.what()).find("shared buffers need 524608 bytes of shared memory per block"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 232448"), std::string::npos) << e.what();
  }
  // A static loop of 2^40 iterations, and one whose bounds overflow when subtracted.
  for (auto [bounds, want] : {std::pair{"0 to 1099511627776", "runs 1099511627776 iterations"},
                              std::pair{"-9223372036854775807 to 9223372036854775807",
                                        "runs 9223372036854775807 iterations"}}) {
    std::string loop = std::regex_replace(std::string(kGroup), std::regex("k = 0 to 2"),
                                          std::string("k = ") + bounds);
    try {
      verify_group_program(parse_group_program(loop));
      ADD_FAILURE() << bounds;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

const char* kTile = R"(kernel rs(sizes M, N, ldx;
               tiles BR, BC;
               tensors X: f32[M, N] strides(ldx, 1) in,
                       S: f32[M] strides(1) out;
               scalars) {
  parallel i = ceildiv(M, BR) {
    %zero = const 0 : f32[BR, 1]
    %sum = serial k = ceildiv(N, BC) iter(%s: f32[BR, 1] = %zero) : f32[BR, 1] {
      %x = load X[(i * BR), (k * 4)] pad 2 : f32[BR, 4]
      %part = reduce.sum %x axis 1 : f32[BR, 1]
      %next = add %s, %part : f32[BR, 1]
      yield %next
    }
    store %sum to S[(i * BR)] dims(0, -1)
  }
}
)";

// Every integer of a TileIR kernel replaced by each extreme value, through the
// parser, the verifier, compile (sim, with a small plan) and a launch.
TEST(ExtremeValues, TileIrTextParserVerifierCompileAndLaunch) {
  Plan plan;
  plan.target = TargetKind::Sim;
  plan.tiles = {{"BR", 4}, {"BC", 4}};
  plan.workers = 2, plan.worker_rows = 2, plan.worker_cols = 1;
  std::vector<float> x(8 * 8, 1.0f), s(8, 0.0f);
  KernelArgs args;
  args.tensors["X"] = TensorArg::host(x.data(), {8, 8});
  args.tensors["S"] = TensorArg::host(s.data(), {8});
  ASSERT_EQ(foreign_exception([&] { compile(parse_tile_kernel(kTile), plan).launch(args); }), "");
  ASSERT_EQ(s[0], 8.0f);
  const std::string base = kTile;
  int tried = 0;
  for (auto [at, length] : integers(base))
    for (const std::string& value : kExtremes) {
      std::string text = base;
      text.replace(at, length, value);
      std::string foreign = foreign_exception([&] {
        TileKernel k = parse_tile_kernel(text);
        verify_tile_kernel(k);
        compile(k, plan).launch(args);
      });
      ++tried;
      EXPECT_EQ(foreign, "") << "number at " << at << " -> " << value << "\n" << text;
    }
  EXPECT_GT(tried, 20);
}

// Every Plan field at each extreme, on every target; compile refuses or compiles.
// (A cpu plan that passes every check would run the C++ compiler: the kernel's
// tiles are refused first for every extreme value here, so none does.)
TEST(ExtremeValues, PlansAtEveryTarget) {
  TileKernel kernel = row_sum_kernel();
  int refused = 0, tried = 0;
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu, TargetKind::Cuda})
    for (int field = 0; field < 9; ++field)
      for (int64_t v : kExtremeInts) {
        Plan plan;
        plan.target = target;
        plan.tiles = {{"BR", 4}, {"BC", 4}};
        plan.workers = 2, plan.worker_rows = 2, plan.worker_cols = 1;
        int iv = static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
        switch (field) {
          case 0: plan.tiles["BR"] = v; break;
          case 1: plan.tiles["BC"] = v; break;
          case 2: plan.workers = iv; break;
          case 3: plan.worker_rows = iv, plan.worker_cols = iv, plan.workers = iv; break;
          case 4: plan.copy_batch = iv; break;
          case 5: plan.window = iv; break;
          case 6: plan.atom_m = v; break;
          case 7: plan.frag_buffers = iv; break;
          case 8: plan.tiles["NOT_A_TILE"] = v; break;
        }
        // Cases that would run the C++ compiler or NVRTC for a sane plan are skipped.
        bool sane = (field == 2 || field == 3) ? iv == 2 || iv == 1 :
                    field == 4 ? iv >= 1 && iv <= 65536 :
                    field == 5 ? iv == 1 : field == 6 ? v == 1 : field == 7 ? iv == 1 :
                    v >= 1 && v <= 1024;
        if (target != TargetKind::Sim && sane) continue;
        std::string error;
        std::string foreign = foreign_exception([&] { compile(kernel, plan); }, &error);
        ++tried;
        refused += !error.empty();
        EXPECT_EQ(foreign, "") << target_name(target) << " field " << field << " = " << v;
      }
  EXPECT_GT(tried, 150);
  EXPECT_GT(refused, tried / 2);
}

// The issue's worker count on a plan: refused with the number; on cuda, more
// threads per block than the device runs.
TEST(ExtremeValues, PlanWorkerBoundsCarryTheNumbers) {
  Plan plan;
  plan.target = TargetKind::Sim;
  plan.tiles = {{"BR", 4}, {"BC", 4}};
  plan.workers = 2000000000;
  try {
    validate_plan(plan);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workers 2000000000 out of range [1, 1024]"), std::string::npos)
        << e.what();
  }
  plan.target = TargetKind::Cuda;
  plan.atom = AtomKind::MmaSync, plan.atom_m = 16, plan.atom_n = 8;
  plan.workers = 64, plan.worker_rows = 8, plan.worker_cols = 8;
  try {
    validate_plan(plan);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workers 64 x 32 threads (mma.sync atom) = 2048 threads per block"),
              std::string::npos)
        << e.what();
  }
}

// Elements a tensor of this shape and these strides spans, as the launch check
// counts them: -1 for a negative extent or stride, 0 when an extent is 0, and a
// number past INT64_MAX when its offsets overflow.
__int128 span(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  __int128 last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) return -1;
    if (shape[d] == 0) return 0;
  }
  for (size_t d = 0; d < shape.size(); ++d) last += static_cast<__int128>(shape[d] - 1) * strides[d];
  return last + 1;
}

// Whether a launch with these tensors is harmless to try: one of them is refused
// (so nothing runs), or every one lies inside the memory behind its pointer. A
// large tensor that is valid would need a pointer that really holds it.
bool harmless(const std::vector<std::pair<__int128, int64_t>>& spans_and_capacity) {
  for (auto [n, cap] : spans_and_capacity)
    if (n < 0 || n >= static_cast<__int128>(std::numeric_limits<int64_t>::max())) return true;
  for (auto [n, cap] : spans_and_capacity)
    if (n > cap) return false;
  return true;
}

// Launch arguments at each extreme: shapes and strides (2^62 extents, negative
// ones, overflowing offsets), on the sim through the public API, and default_plan
// and run_sim directly.
TEST(ExtremeValues, LaunchArguments) {
  TileKernel kernel = row_sum_kernel();
  Plan plan;
  plan.target = TargetKind::Sim;
  plan.tiles = {{"BR", 4}, {"BC", 4}};
  plan.workers = 2, plan.worker_rows = 2, plan.worker_cols = 1;
  Kernel k = compile(kernel, plan);
  std::vector<float> x(64, 1.0f), s(64, 0.0f);
  int tried = 0, refused = 0;
  for (int64_t v : kExtremeInts)
    for (int64_t w : kExtremeInts) {
      EXPECT_EQ(foreign_exception([&] {
                  default_plan(kernel, TargetKind::Sim, {{"M", v}, {"N", w}, {"ldx", w}});
                }),
                "")
          << "default_plan M = " << v << ", N = " << w;
      // Shape [v, w], contiguous.
      std::vector<int64_t> xs = {v, w}, xst = {w, 1}, ss = {v}, sst = {1};
      std::string error;
      if (harmless({{span(xs, xst), 64}, {span(ss, sst), 64}})) {
        KernelArgs args;
        args.tensors["X"] = TensorArg::host(x.data(), xs);
        args.tensors["S"] = TensorArg::host(s.data(), ss);
        EXPECT_EQ(foreign_exception([&] { k.launch(args); }, &error), "") << "shape " << v << " x " << w;
        ++tried;
        refused += !error.empty();
      }
      // Shape [8, 8] with strides (v, 1), and S with stride w.
      xs = {8, 8}, xst = {v, 1}, ss = {8}, sst = {w};
      error.clear();
      if (harmless({{span(xs, xst), 64}, {span(ss, sst), 64}})) {
        KernelArgs args;
        args.tensors["X"] = TensorArg::host(x.data(), xs, xst);
        args.tensors["S"] = TensorArg::host(s.data(), ss, sst);
        EXPECT_EQ(foreign_exception([&] { k.launch(args); }, &error), "") << "strides " << v << ", " << w;
        ++tried;
        refused += !error.empty();
      }
    }
  EXPECT_GT(tried, 60);
  EXPECT_GT(refused, tried / 2);
  // run_sim directly, M at each extreme: the program touches rows 0 to 7 only, so
  // every M is harmless with 16 rows behind the pointer.
  GroupProgram p = parse_group_program(kGroup);
  std::vector<float> g(16 * 8, 1.0f);
  for (int64_t v : kExtremeInts) {
    LaunchArgs a;
    a.sizes = {{"M", v}};
    a.scalars = {{"s", 1.0}};
    a.tensors = {{"X", g.data()}};
    EXPECT_EQ(foreign_exception([&] { run_sim(p, a); }), "") << "M = " << v;
  }
}

}  // namespace
}  // namespace tessel
