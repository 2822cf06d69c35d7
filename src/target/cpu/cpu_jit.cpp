#include "target/cpu/cpu_jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/kernel_cache.h"
#include "runtime/tensor_check.h"
#include "runtime/thread_pool.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_support.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// The ISA's flags (cpu_isa.h) come first, then:
// -ffp-contract=fast: a * b + c becomes one FMA.
// -fno-math-errno: sqrt and friends need not set errno (nothing reads it), so they
// inline and vectorize.
// -nostdlib: the unit is header-free and needs nothing linked in; what it calls
// (memcpy, memset, libm for f64 math) resolves at dlopen against the process, which
// has libc and libm loaded (libstdc++ needs both). Linking the C++ runtime took
// about a third of a cold compile. Only the compiler's own helper archive (libgcc,
// static) is linked, after the source, for any helper call the compiler emits.
// -fno-tree-loop-distribute-patterns: a copy or fill loop stays a loop in the ISA's
// vectors instead of becoming a call of the C library's memcpy or memset, whose
// speed differs from one machine's library to another's (see tsl_copy_f32).
// -pipe: no temporary assembly file.
// A sanitized tessel (TESSEL_SANITIZE) sanitizes its kernels too, linked the usual
// way: they are loaded into a process that already carries the sanitizer runtimes.
const char* kCommonFlags = "-O2 -ffp-contract=fast -fno-math-errno -fno-tree-loop-distribute-patterns -fPIC -shared -pipe"
#ifdef TESSEL_SANITIZE
                           " -fsanitize=address,undefined -fno-sanitize-recover=all"
#else
                           " -nostdlib"
#endif
    ;

#ifdef TESSEL_SANITIZE
const char* kLinkAfter = "";
#else
const char* kLinkAfter = "-lgcc";
#endif

std::string compile_flags(const CpuIsaInfo& isa) { return std::string(isa.flags) + " " + kCommonFlags; }

// TESSEL_PASS_TIMING=1: each part of a cpu compile on stderr, as compile.cpp prints
// the compiler's steps.
class PartTimer {
 public:
  explicit PartTimer(const char* name) : name_(name), start_(std::chrono::steady_clock::now()) {}
  ~PartTimer() {
    if (!std::getenv("TESSEL_PASS_TIMING")) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "tessel: %-14s %8.3f ms\n", name_, ms);
  }

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};

using ScratchFn = int64_t (*)();
using GridFn = int (*)(const int64_t*, int64_t*);

// A word as a shell reads it: as is when it holds only harmless characters.
std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=,.:/@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

// What identifies the compiler in a cache entry's stamp, once per process and
// compiler. A plain command name is looked up on PATH and named by where it was
// found and the file that name leads to (symlinks followed: its device, inode,
// size and modification time). No process is started and no link is read one by
// one, so a cache hit in a fresh process stays cheap (running `$CXX --version`
// took about 2 ms; resolving /usr/bin/c++'s chain of alternatives link by link,
// about 0.1 ms). A command with arguments (CXX="ccache g++") falls back to the
// first line of `$CXX --version`.
std::string compiler_identity(const std::string& cxx) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(cxx);
  if (it != known.end()) return it->second;
  std::string id;
  if (cxx.find_first_of(" \t'\"\\") == std::string::npos) {
    std::vector<std::string> candidates;
    if (cxx.find('/') != std::string::npos) candidates.push_back(cxx);
    else if (const char* path = std::getenv("PATH")) {
      std::string p = path;
      for (size_t at = 0; at <= p.size();) {
        size_t end = p.find(':', at);
        if (end == std::string::npos) end = p.size();
        candidates.push_back((end == at ? std::string(".") : p.substr(at, end - at)) + "/" + cxx);
        at = end + 1;
      }
    }
    for (const std::string& c : candidates) {
      struct stat st;
      if (stat(c.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(c.c_str(), X_OK) != 0) continue;
      id = c + " file " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + " size " +
           std::to_string(st.st_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
      break;
    }
  }
  if (id.empty()) {
    std::string line;
    if (FILE* f = popen((cxx + " --version 2>/dev/null").c_str(), "r")) {
      char buf[512];
      if (std::fgets(buf, sizeof buf, f)) line = buf;
      pclose(f);
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    id = line;
  }
  return known[cxx] = id;
}

// A loaded shared object; it stays loaded while any kernel refers to it.
struct Library {
  void* handle = nullptr;
  CpuGroupFn group = nullptr;
  CpuGroupRegsFn group_t3s2 = nullptr;  // optional (cpu_jit.h)
  GridFn grid = nullptr;
  int64_t scratch_floats = 0;
  std::string path;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

std::shared_ptr<Library> load(const std::string& path, std::string* why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *why = dlerror();
    return nullptr;
  }
  auto lib = std::make_shared<Library>();
  lib->handle = h;
  lib->path = path;
  lib->group = reinterpret_cast<CpuGroupFn>(dlsym(h, "tessel_group"));
  lib->group_t3s2 = reinterpret_cast<CpuGroupRegsFn>(dlsym(h, "tessel_group_t3s2"));
  lib->grid = reinterpret_cast<GridFn>(dlsym(h, "tessel_grid"));
  auto scratch = reinterpret_cast<ScratchFn>(dlsym(h, "tessel_scratch_floats"));
  if (!lib->group || !lib->grid || !scratch) {
    *why = path + " lacks tessel_group, tessel_grid or tessel_scratch_floats";
    return nullptr;
  }
  auto bind = reinterpret_cast<void (*)(void* const*)>(dlsym(h, "tessel_bind"));
  if (!bind) {
    *why = path + " lacks tessel_bind";
    return nullptr;
  }
  bind(cpu_support_table());  // the unit's calls into tessel (cpu_support.h)
  lib->scratch_floats = scratch();
  return lib;
}

// What a kernel needs to turn LaunchArgs into the emitted function's arrays (the
// grid comes from the unit: tessel_grid).
struct Signature {
  std::string name;
  std::vector<std::string> size_params;
  std::vector<ScalarParam> scalars;
  std::vector<TensorParam> tensors;
  std::vector<std::pair<std::string, int64_t>> fixed_sizes;  // GroupProgram::fixed_sizes
};

// A thread's scratch, reused across launches (64-byte aligned, grown on demand).
float* thread_scratch(int64_t floats) {
  struct Scratch {
    float* data = nullptr;
    int64_t floats = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch s;
  if (s.floats < floats) {
    std::free(s.data);
    size_t bytes = (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64;
    s.data = static_cast<float*>(std::aligned_alloc(64, bytes));
    TESSEL_ASSERT(s.data, "out of memory for kernel scratch");
    s.floats = floats;
  }
  return s.data;
}

class LoadedKernel : public CpuKernel {
 public:
  LoadedKernel(std::shared_ptr<Library> lib, Signature sig, CpuCompileInfo info)
      : lib_(std::move(lib)), sig_(std::move(sig)), info_(std::move(info)) {}

  const CpuCompileInfo& info() const override { return info_; }
  CpuGroupEntry group_entry() const override { return {lib_->group, lib_->scratch_floats, lib_->group_t3s2}; }

  CpuLaunch bind(const LaunchArgs& args) const override {
    CpuLaunch out;
    std::vector<int64_t>& sizes = out.sizes;
    for (const std::string& name : sig_.size_params) {
      auto it = args.sizes.find(name);
      if (it == args.sizes.end())
        user_error(ErrorKind::InvalidArgument, "missing size parameter '" + name + "'");
      if (it->second < 0)
        user_error(ErrorKind::InvalidArgument, "size parameter '" + name + "' is negative (" +
                                                   std::to_string(it->second) + ")");
      sizes.push_back(it->second);
    }
    check_fixed_sizes(sig_.name, sig_.fixed_sizes, args.sizes);
    std::vector<double>& scalars = out.scalars;
    for (const ScalarParam& s : sig_.scalars) {
      auto it = args.scalars.find(s.name);
      if (it == args.scalars.end())
        user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + s.name + "'");
      scalars.push_back(it->second);
    }
    std::vector<float*>& tensors = out.tensors;
    std::vector<TensorSpan> spans;
    for (const TensorParam& t : sig_.tensors) {
      auto it = args.tensors.find(t.name);
      if (it == args.tensors.end())
        user_error(ErrorKind::InvalidArgument, "missing tensor '" + t.name + "'");
      if (!it->second) user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "' is null");
      // Shapes and strides (runtime/tensor_check.h); the emitted code also forms
      // byte addresses from element offsets, so those must fit in 64 bits too.
      TensorLayout layout = check_tensor(t, args.sizes);
      int64_t bytes = 0;
      if (__builtin_mul_overflow(layout.elements, int64_t{dtype_bytes(t.dtype)}, &bytes))
        user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "': " + std::to_string(layout.elements) +
                                                   " elements of " + dtype_name(t.dtype) +
                                                   " overflow 64-bit byte offsets");
      tensors.push_back(it->second);
      spans.push_back({&t, reinterpret_cast<uintptr_t>(it->second), std::move(layout)});
    }
    check_tensor_overlap(spans);  // a written tensor shares memory with no other
    int64_t grid[8] = {};
    int rank = lib_->grid(sizes.data(), grid);
    TESSEL_ASSERT(rank >= 0 && rank <= 8, "grid has more than 8 dimensions");
    std::vector<int64_t>& extents = out.grid;
    int64_t& groups = out.groups;
    groups = 1;
    bool overflow = false;
    std::string shape;
    for (int d = 0; d < rank; ++d) {
      extents.push_back(std::max<int64_t>(0, grid[d]));
      overflow |= __builtin_mul_overflow(groups, extents.back(), &groups);
      shape += (shape.empty() ? "" : " x ") + std::to_string(extents.back());
    }
    if (overflow) user_error(ErrorKind::InvalidArgument, "grid " + shape + " overflows 64-bit group counts");
    return out;
  }

  void execute(const CpuLaunch& launch, int threads) const override {
    const Library& lib = *lib_;
    const std::vector<int64_t>& extents = launch.grid;
    auto group = [&](int64_t g) {
      // The last grid dimension varies fastest (group 0 is all zeros: no divisions).
      int64_t coord[8] = {};
      for (size_t d = extents.size(); g > 0 && d-- > 0;) {
        coord[d] = g % extents[d];
        g /= extents[d];
      }
      float* scratch = thread_scratch(lib.scratch_floats);
      if (cpu_scratch_poisoned())
        std::fill(scratch, scratch + lib.scratch_floats, std::numeric_limits<float>::quiet_NaN());
      lib.group(launch.sizes.data(), launch.scalars.data(), launch.tensors.data(), coord, scratch);
    };
    // One group needs no pool (small problems).
    if (launch.groups == 1) return group(0);
    parallel_for(launch.groups, threads, group);
  }

 private:
  std::shared_ptr<Library> lib_;
  Signature sig_;
  CpuCompileInfo info_;
};

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = s.find_first_not_of(" \t", at)) != std::string::npos) {
    size_t end = s.find_first_of(" \t", at);
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

// Starts argv[0] (looked up on PATH) with stderr into `err_path`: its pid, or -1
// when it cannot be started (said in `err_path`).
pid_t start_command(const std::vector<char*>& argv, const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_TRUNC, 0600);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::string line = std::string(argv[0]) + ": cannot be started (" + std::strerror(rc) + ")\n";
    write_file_atomic(err_path, line);
    return -1;
  }
  return pid;
}

// A started command's exit status, or 127 when it could not be started, 128 + N
// when signal N ended it.
int wait_command(pid_t pid) {
  if (pid < 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127;
}

std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<uint64_t, std::shared_ptr<Library>>& memory_cache() {
  static std::map<uint64_t, std::shared_ptr<Library>> cache;
  return cache;
}

// One run of the compiler driver: its words and the file its stderr goes to.
struct CompilerRun {
  std::vector<std::string> words;
  std::string err;
  pid_t pid = -1;
  void start() {
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid = start_command(argv, err);
  }
  // As a shell reads it, to reproduce a failure.
  std::string command() const {
    std::string c;
    for (const std::string& w : words) c += (c.empty() ? "" : " ") + shell_quote(w);
    return c;
  }
};

// Compiles the units at src_paths (split_cpu_units) into a temporary file beside
// so_path, then publishes it as a sealed cache entry (seal_cache_entry: the .so with
// a footer naming `stamp`) by one rename, so two processes compiling the same kernel
// at once both leave a whole entry. One unit takes one run of the compiler, which
// also links; two are compiled at once, each to an object, then linked. Returns the
// wall time of those runs in ms.
double compile_to(const std::string& cxx, const std::string& flags, const std::vector<std::string>& src_paths,
                  const std::string& so_path, const std::string& stamp) {
  // Every file made exclusively (unpredictable names, mode 0600) before the tools
  // write it. The compiler is started directly, not through a shell (CXX and the
  // flags split at spaces, as make splits $(CXX)).
  std::vector<std::string> temps;
  auto temp = [&](const std::string& suffix) { return temps.emplace_back(create_temp_file(so_path + suffix)); };
  const std::string tmp = temp("");
  auto run_of = [&](std::vector<std::string> args) {
    CompilerRun r{split_words(cxx + " " + flags), temp(".err")};
    r.words.insert(r.words.end(), args.begin(), args.end());
    return r;
  };
  std::vector<CompilerRun> compiles;
  std::vector<std::string> link_args = {"-o", tmp};
  if (src_paths.size() == 1) link_args.push_back(src_paths[0]);
  else
    for (const std::string& src : src_paths) {
      link_args.push_back(temp(".o"));  // no suffix the driver knows: it goes to the linker
      compiles.push_back(run_of({"-c", "-o", link_args.back(), src}));
    }
  for (const std::string& w : split_words(kLinkAfter)) link_args.push_back(w);
  CompilerRun link = run_of(link_args);
  auto remove_temps = [&] {
    for (const std::string& t : temps) std::remove(t.c_str());
  };
  // The first run that failed, with its command and what it printed.
  auto check = [&](const CompilerRun& r, int rc, const std::string& source) {
    if (rc == 0) return;
    std::string diagnostics;
    read_file(r.err, &diagnostics);
    remove_temps();
    if (diagnostics.size() > 8000) diagnostics = diagnostics.substr(0, 8000) + "\n[... truncated]";
    user_error(ErrorKind::Compile, "cpu kernel failed to compile (exit status " + std::to_string(rc) +
                                       ")\n  command: " + r.command() + "\n  source: " + source + "\n" +
                                       diagnostics);
  };
  double ms = 0;
  {
    PartTimer t("cpu-c++");
    auto t0 = std::chrono::steady_clock::now();
    for (CompilerRun& r : compiles) r.start();
    std::vector<int> rcs;
    for (CompilerRun& r : compiles) rcs.push_back(wait_command(r.pid));
    for (size_t i = 0; i < compiles.size(); ++i) check(compiles[i], rcs[i], src_paths[i]);
    link.start();
    check(link, wait_command(link.pid), src_paths.size() == 1 ? src_paths[0] : "(the units' link)");
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  PartTimer t("cpu-seal");
  std::string so;
  bool ok = read_file(tmp, &so);
  remove_temps();
  if (!ok) user_error(ErrorKind::Runtime, "cannot read the compiled kernel " + tmp);
  write_file_atomic(so_path, seal_cache_entry(so, stamp));
  return ms;
}

// A private directory for one compile when the cache cannot be written: the
// kernel is loaded from it and the files removed, so it lives in memory only.
std::string private_build_dir() {
  const char* t = std::getenv("TMPDIR");
  std::string pattern = std::string(t && *t ? t : "/tmp") + "/tessel-nocache-XXXXXX";
  if (!mkdtemp(pattern.data()))
    user_error(ErrorKind::Runtime, "cannot create a directory to compile in (" + pattern + ")");
  return pattern;
}

// The program's name as a harmless file name part.
std::string file_stem(const std::string& name) {
  std::string s;
  for (char c : name.substr(0, 64)) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return s.empty() ? "kernel" : s;
}

// One thread runs a whole group out of its own scratch (staging buffers, every
// version, and every worker's fragment part): refuse programs whose scratch would
// not fit, before the emitter's 64-bit offsets could wrap.
constexpr int64_t kMaxScratchBytes = int64_t{1} << 30;

void check_scratch(const GroupProgram& program) {
  int64_t floats = 0;
  bool overflow = false;
  for (const Buffer& b : program.buffers) {
    if (b.space == Space::Global) continue;
    // Shared: every version; private: every worker's part (replicated parts repeat).
    int64_t n = 0, rows = b.rows, cols = b.cols, copies = std::max<int64_t>(1, b.versions);
    if (b.space == Space::Private && program.workers >= 1 && program.worker_rows >= 1 &&
        program.worker_cols >= 1) {
      FragPart part = frag_part(program, b, 0);
      rows = part.rows, cols = part.cols, copies = program.workers;
    }
    overflow |= __builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, copies, &n) ||
                __builtin_mul_overflow(n, int64_t{b.dtype == DType::F64 ? 2 : 1}, &n) ||
                __builtin_add_overflow(floats, n, &floats);
  }
  if (overflow || floats > kMaxScratchBytes / 4)
    user_error(ErrorKind::Plan, "program " + program.name + " needs " +
                                    (overflow ? std::string("more than 2^63") : std::to_string(floats * 4)) +
                                    " bytes of scratch per group; the cpu target allows at most " +
                                    std::to_string(kMaxScratchBytes));
}

// Everything besides the source that decides the compiled bytes: the tessel
// version, the compiler, its flags and the CPU. An entry must carry the same stamp
// to be loaded.
std::string cpu_stamp(const CpuIsaInfo& isa) {
  std::string cxx = compiler();
  return std::string("tessel ") + kTesselVersion + "\ncompiler " + cxx + " " + compiler_identity(cxx) +
         "\nflags " + compile_flags(isa) + " " + kLinkAfter + "\ncpu " + hex64(fnv1a64(cpu_fingerprint())) + "\n";
}

// Loads the sealed entry at `so_path` after checking it (never dlopen an entry
// first: a damaged or foreign .so can crash the process or run the wrong code).
// Null when it is missing or unusable; *refused when someone else owns it or could
// have written it (it is then not ours to run, nor to replace). Every other
// problem is one warning, ending in `then`.
std::shared_ptr<Library> load_entry(const std::string& so_path, const std::string& stamp, const char* then,
                                    bool* refused) {
  PartTimer t("cpu-cache");
  std::string why, entry;
  CacheRead read = read_cache_entry(so_path, &entry, &why);
  *refused = read == CacheRead::Refused;
  if (read == CacheRead::Refused)
    warn_once("kernel cache entry " + so_path + " " + why +
              "; it is not loaded, and this kernel is kept in memory only");
  if (read != CacheRead::Ok) return nullptr;
  if (!check_cache_entry(entry, stamp, &why)) {
    warn_once("kernel cache entry " + so_path + " " + why + "; " + then);
    return nullptr;
  }
  PartTimer d("cpu-dlopen");
  std::shared_ptr<Library> lib = load(so_path, &why);
  if (!lib) warn_once("kernel cache entry " + so_path + " does not load (" + why + "); " + then);
  return lib;
}

// What identifies the tessel build that is running: the file holding this code
// (the executable, or a shared library tessel is part of) by path, inode, size and
// modification time. Another build may lower or emit differently, so a request
// entry written by it must not be used. "" when it cannot be told.
const std::string& tessel_build_identity() {
  static const std::string id = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&tessel_build_identity), &info)) return std::string();
    struct stat st;
    // The executable's name may be as it was started (relative, or found on PATH).
    std::string file = info.dli_fname ? info.dli_fname : "";
    if (file.empty() || stat(file.c_str(), &st) != 0) {
      file = "/proc/self/exe";
      if (stat(file.c_str(), &st) != 0) return std::string();
    }
    return file + " inode " + std::to_string(st.st_ino) + " size " + std::to_string(st.st_size) + " mtime " +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

// A request entry's file: the kernel's name and the hash of the request, this
// build and the stamp.
std::string request_path(const std::string& dir, const std::string& request, const std::string& name,
                         const std::string& stamp) {
  uint64_t hash = fnv1a64(request + "\n--\n" + tessel_build_identity() + "\n" + stamp);
  return dir + "/" + file_stem(name) + "-" + hex64(hash) + ".req";
}

}  // namespace

std::shared_ptr<const CpuKernel> compile_cpu(const GroupProgram& program) {
  check_scratch(program);
  Signature sig{program.name, program.size_params, program.scalars, program.tensors, program.fixed_sizes};
  const CpuIsaInfo& isa = cpu_isa_info(cpu_isa());
  std::string source;
  {
    PartTimer t("cpu-emit");
    source = emit_cpu(program, isa.isa);
  }
  std::string cxx = compiler(), flags = compile_flags(isa), stamp = cpu_stamp(isa);
  uint64_t hash = fnv1a64(source + "\n--\n" + stamp);

  CpuCompileInfo info;
  // One compile at a time per process: simple, and a second request for the same
  // program waits for the first rather than compiling it again.
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& cache = memory_cache();
  if (auto it = cache.find(hash); it != cache.end()) {
    info.from_memory = true;
    info.cache_path = it->second->path;
    return std::make_shared<LoadedKernel>(it->second, std::move(sig), std::move(info));
  }
  // An unsafe cache directory reads as none (writable_kernel_cache_dir).
  std::string dir = writable_kernel_cache_dir();
  bool memory_only = dir.empty();
  const std::string name = "/" + file_stem(program.name) + "-" + hex64(hash);
  std::string so_path = dir + name + ".so";
  std::shared_ptr<Library> lib;
  if (!memory_only) {
    lib = load_entry(so_path, stamp, "rebuilding it", &memory_only);
    info.from_disk = lib != nullptr;
  }
  if (memory_only) {
    dir = private_build_dir();
    so_path = dir + name + ".so";
  }
  info.cache_path = so_path;
  if (!lib) {
    // The sources stay beside the entry, to reproduce a compile.
    std::vector<std::string> units = split_cpu_units(source), src_paths;
    for (size_t i = 0; i < units.size(); ++i) {
      src_paths.push_back(dir + name + (i == 0 ? "" : "-unit" + std::to_string(i + 1)) + ".cpp");
      write_file_atomic(src_paths.back(), units[i]);
    }
    info.compile_ms = compile_to(cxx, flags, src_paths, so_path, stamp);
    PartTimer t("cpu-dlopen");
    std::string why;
    lib = load(so_path, &why);
    if (!lib) user_error(ErrorKind::Runtime, "cannot load compiled kernel " + so_path + ": " + why);
  }
  if (memory_only) {
    // The loaded code stays mapped after its file is gone.
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    info.cache_path.clear();
    lib->path.clear();  // a later memory hit names no file either
  }
  cache[hash] = lib;
  return std::make_shared<LoadedKernel>(lib, std::move(sig), std::move(info));
}

std::shared_ptr<const CpuKernel> find_cpu_kernel(const std::string& request, const TileKernel& kernel,
                                                 const std::vector<std::pair<std::string, int64_t>>& fixed_sizes) {
  PartTimer t("cpu-request");
  if (tessel_build_identity().empty()) return nullptr;
  const std::string stamp = cpu_stamp(cpu_isa_info(cpu_isa()));
  std::lock_guard<std::mutex> lock(cache_mutex());
  std::string dir = readable_kernel_cache_dir();  // a miss finds out whether it can write there
  if (dir.empty()) return nullptr;
  // The request entry's payload is the hash and file name of the kernel's entry.
  std::string path = request_path(dir, request, kernel.name, stamp), why, entry;
  std::string_view payload;
  if (read_cache_entry(path, &entry, &why) != CacheRead::Ok) return nullptr;  // refusals: compile_cpu says
  if (!check_cache_entry(entry, stamp, &why, &payload)) {
    warn_once("kernel request entry " + path + " " + why + "; compiling the kernel again");
    return nullptr;
  }
  size_t space = payload.find(' ');
  std::string hash_hex(payload.substr(0, space)), file(payload.substr(space + 1));
  if (space == std::string_view::npos || hash_hex.size() != 16 ||
      hash_hex.find_first_not_of("0123456789abcdef") != std::string::npos || file.find('/') != std::string::npos) {
    warn_once("kernel request entry " + path + " names no kernel entry; compiling the kernel again");
    return nullptr;
  }
  uint64_t hash = std::strtoull(hash_hex.c_str(), nullptr, 16);
  CpuCompileInfo info;
  info.from_request = true;
  std::shared_ptr<Library> lib;
  if (auto it = memory_cache().find(hash); it != memory_cache().end()) {
    lib = it->second;
    info.from_memory = true;
  } else {
    bool refused = false;
    lib = load_entry(dir + "/" + file, stamp, "compiling the kernel again", &refused);
    if (!lib) return nullptr;
    info.from_disk = true;
    memory_cache()[hash] = lib;
  }
  info.cache_path = lib->path;
  Signature sig{kernel.name, kernel.size_params, kernel.scalars, kernel.tensors, {}};
  for (const auto& fixed : fixed_sizes)  // as specialize_sizes keeps them: the kernel's own
    if (std::count(kernel.size_params.begin(), kernel.size_params.end(), fixed.first)) sig.fixed_sizes.push_back(fixed);
  return std::make_shared<LoadedKernel>(lib, std::move(sig), std::move(info));
}

void remember_cpu_request(const std::string& request, const TileKernel& kernel, const CpuKernel& compiled) {
  const std::string& so_path = compiled.info().cache_path;
  if (so_path.empty() || tessel_build_identity().empty()) return;  // kept in memory only
  const std::string stamp = cpu_stamp(cpu_isa_info(cpu_isa()));
  std::string dir = so_path.substr(0, so_path.rfind('/')), file = so_path.substr(so_path.rfind('/') + 1);
  // The hash is the last 16 characters before ".so" (compile_cpu's names).
  std::string hash_hex = file.substr(file.size() - 3 - 16, 16);
  std::string path = request_path(dir, request, kernel.name, stamp);
  try {
    write_file_atomic(path, seal_cache_entry(hash_hex + " " + file, stamp));
  } catch (const Error& e) {
    warn_once(std::string(e.what()) + "; the next process compiles this kernel's program again");
  }
}

void clear_cpu_memory_cache() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  memory_cache().clear();
}

std::atomic<bool> cpu_scratch_poison_on{false};
void set_cpu_scratch_poison(bool on) { cpu_scratch_poison_on.store(on); }

}  // namespace tessel
