#include "plan/tuning_cache.h"

#include <sys/stat.h>

#include <cmath>
#include <mutex>
#include <sstream>

#include "ir/tile_text.h"
#include "runtime/kernel_cache.h"
#include "tessel/error.h"

namespace tessel {
namespace {

[[noreturn]] void bad_line(const std::string& what) { user_error(ErrorKind::InvalidArgument, what); }

int64_t to_int(const std::string& what, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad_line(what + ": '" + s + "' is not an integer");
  return v;
}

std::string sizes_word(const std::map<std::string, int64_t>& sizes) {
  std::string s;
  for (const auto& [n, v] : sizes) s += (s.empty() ? "" : ",") + n + "=" + std::to_string(v);
  return s.empty() ? "-" : s;
}

std::map<std::string, int64_t> parse_sizes_word(const std::string& w) {
  std::map<std::string, int64_t> out;
  if (w == "-") return out;
  std::istringstream in(w);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) bad_line("size '" + item + "' is not NAME=V");
    out[item.substr(0, eq)] = to_int("size " + item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

int64_t size_class(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t{1} << 40)) p *= 2;
  return p;
}

}  // namespace

std::string plan_to_line(const Plan& p) {
  std::string tiles;
  for (const auto& [n, v] : p.tiles) tiles += (tiles.empty() ? "" : ",") + n + ":" + std::to_string(v);
  return "tiles=" + (tiles.empty() ? std::string("-") : tiles) + " workers=" + std::to_string(p.workers) +
         " grid=" + std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols) +
         " batch=" + std::to_string(p.copy_batch) + " window=" + std::to_string(p.window) +
         " async=" + (p.async_copy ? "1" : "0") + " atom=" + atom_name(p.atom) + ":" +
         std::to_string(p.atom_m) + "x" + std::to_string(p.atom_n) + " frag=" + std::to_string(p.frag_buffers) +
         // The cuda-only fields, when set.
         (p.tma ? " tma=1 producers=" + std::to_string(p.producers) : std::string()) +
         (p.cluster > 1 ? " cluster=" + std::to_string(p.cluster) : std::string()) +
         (p.persistent ? " persistent=" + std::to_string(p.persistent) + " band=" + std::to_string(p.tile_band)
                       : std::string()) +
         (p.direct ? " direct=1" : "");
}

Plan plan_from_line(const std::string& line, TargetKind target) {
  Plan p;
  p.target = target;
  std::istringstream in(line);
  std::string word;
  int fields = 0;
  auto pair_of = [&](const std::string& s, char sep, const std::string& what) {
    size_t x = s.find(sep);
    if (x == std::string::npos) bad_line(what + ": '" + s + "' lacks '" + sep + "'");
    return std::make_pair(s.substr(0, x), s.substr(x + 1));
  };
  while (in >> word) {
    auto [key, value] = pair_of(word, '=', "plan");
    ++fields;
    if (key == "tiles") {
      if (value == "-") continue;
      std::istringstream t(value);
      std::string item;
      while (std::getline(t, item, ',')) {
        auto [n, v] = pair_of(item, ':', "plan tile");
        p.tiles[n] = to_int("plan tile " + n, v);
      }
    } else if (key == "workers") p.workers = static_cast<int>(to_int(key, value));
    else if (key == "grid") {
      auto [r, c] = pair_of(value, 'x', "plan grid");
      p.worker_rows = static_cast<int>(to_int(key, r));
      p.worker_cols = static_cast<int>(to_int(key, c));
    } else if (key == "batch") p.copy_batch = static_cast<int>(to_int(key, value));
    else if (key == "window") p.window = static_cast<int>(to_int(key, value));
    else if (key == "async") p.async_copy = to_int(key, value) != 0;
    else if (key == "atom") {
      auto [kind, mn] = pair_of(value, ':', "plan atom");
      auto [m, n] = pair_of(mn, 'x', "plan atom");
      p.atom = kind == "fma" ? AtomKind::Fma : kind == "mma.sync" ? AtomKind::MmaSync
               : kind == "wgmma" ? AtomKind::Wgmma : (bad_line("plan atom: unknown '" + kind + "'"), AtomKind::Fma);
      p.atom_m = to_int(key, m);
      p.atom_n = to_int(key, n);
    } else if (key == "frag") p.frag_buffers = static_cast<int>(to_int(key, value));
    else if (key == "tma") { p.tma = to_int(key, value) != 0; --fields; }
    else if (key == "producers") { p.producers = static_cast<int>(to_int(key, value)); --fields; }
    else if (key == "cluster") { p.cluster = static_cast<int>(to_int(key, value)); --fields; }
    else if (key == "persistent") { p.persistent = static_cast<int>(to_int(key, value)); --fields; }
    else if (key == "band") { p.tile_band = static_cast<int>(to_int(key, value)); --fields; }
    else if (key == "direct") { p.direct = to_int(key, value) != 0; --fields; }
    else bad_line("plan: unknown field '" + key + "'");
  }
  if (fields != 8) bad_line("plan: expected 8 fields, got " + std::to_string(fields) + " in '" + line + "'");
  validate_plan(p);
  return p;
}

namespace {
void clear_locations(Region& r) {
  for (TileOp& op : r.ops) {
    op.loc = SourceLoc{};
    for (Region& sub : op.regions) clear_locations(sub);
  }
}
}  // namespace

// Of the text without source locations: where a kernel was written (a C++ file of
// this build, a .tir file) does not change what it computes, and a kernel file
// printed from a C++ kernel must name the same entries as that kernel.
std::string kernel_hash(const TileKernel& kernel) {
  TileKernel k = kernel;
  clear_locations(k.body);
  return hex64(fnv1a64(print_tile_kernel(k)));
}

TuningCache::TuningCache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) dir_ = kernel_cache_dir();
  std::string why = cache_path_distrust(dir_);
  if (!why.empty())
    user_error(ErrorKind::Runtime, "tuning cache directory " + dir_ + " " + why +
                                       "; refusing to use it (chmod go-w, or set TESSEL_CACHE_DIR)");
  path_ = dir_ + "/tuning-v1.txt";
}

std::vector<TunedShape> TuningCache::entries() const {
  std::string text, why;
  CacheRead r = read_cache_entry(path_, &text, &why);
  if (r == CacheRead::Missing) return {};
  if (r == CacheRead::Refused) user_error(ErrorKind::Runtime, "tuning cache " + path_ + " " + why);
  std::vector<TunedShape> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      std::istringstream w(line);
      TunedShape e;
      std::string target, threads, sizes, us;
      if (!(w >> e.kernel_hash >> target >> threads >> sizes >> us)) bad_line("too few fields");
      e.target = parse_target(target);
      e.threads = static_cast<int>(to_int("threads", threads));
      e.sizes = parse_sizes_word(sizes);
      e.best_us = std::strtod(us.c_str(), nullptr);
      std::string rest;
      std::getline(w, rest);
      e.plan = plan_from_line(rest, e.target);
      out.push_back(std::move(e));
    } catch (const Error& err) {
      user_error(ErrorKind::Runtime, path_ + ":" + std::to_string(number) + ": " + err.what());
    }
  }
  return out;
}

std::optional<TunedShape> best_tuned_shape(const std::vector<TunedShape>& entries, const std::string& hash,
                                           TargetKind target, int threads,
                                           const std::map<std::string, int64_t>& sizes, bool* exact) {
  std::optional<TunedShape> best;
  double best_distance = 0;
  for (const TunedShape& e : entries) {
    if (e.kernel_hash != hash || e.target != target || e.threads != threads || e.sizes.size() != sizes.size())
      continue;
    double distance = 0;
    bool same_class = true;
    for (const auto& [n, v] : sizes) {
      auto it = e.sizes.find(n);
      if (it == e.sizes.end() || size_class(it->second) != size_class(v)) {
        same_class = false;
        break;
      }
      distance += std::abs(std::log(double(std::max<int64_t>(1, it->second)) / double(std::max<int64_t>(1, v))));
    }
    if (!same_class) continue;
    if (!best || distance < best_distance) {
      best = e;
      best_distance = distance;
    }
  }
  if (exact) *exact = best && best_distance == 0;
  return best;
}

std::optional<TunedShape> TuningCache::lookup(const std::string& hash, TargetKind target, int threads,
                                              const std::map<std::string, int64_t>& sizes, bool* exact) const {
  return best_tuned_shape(entries(), hash, target, threads, sizes, exact);
}

std::optional<TunedShape> lookup_tuned_shape(const std::string& hash, TargetKind target, int threads,
                                             const std::map<std::string, int64_t>& sizes, bool* exact) {
  struct Snapshot {
    std::string path;
    int64_t size = -1, mtime_ns = -1;
    std::vector<TunedShape> entries;
  };
  static std::mutex mutex;
  static Snapshot snapshot;
  if (exact) *exact = false;
  std::lock_guard<std::mutex> lock(mutex);
  try {
    const std::string path = kernel_cache_dir() + "/tuning-v1.txt";
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;  // no file: nothing tuned
    const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (path != snapshot.path || st.st_size != snapshot.size || mtime != snapshot.mtime_ns) {
      snapshot = Snapshot{path, int64_t(st.st_size), mtime, {}};
      snapshot.entries = TuningCache().entries();  // the directory's and the file's checks
    }
  } catch (const Error&) {
    snapshot = Snapshot{};
    return std::nullopt;
  }
  return best_tuned_shape(snapshot.entries, hash, target, threads, sizes, exact);
}

void TuningCache::record(const TunedShape& entry) {
  std::vector<TunedShape> all = entries();
  std::string text;
  auto line = [](const TunedShape& e) {
    std::ostringstream s;
    s.precision(9);
    s << e.kernel_hash << " " << target_name(e.target) << " " << e.threads << " " << sizes_word(e.sizes) << " "
      << e.best_us << " " << plan_to_line(e.plan) << "\n";
    return s.str();
  };
  for (const TunedShape& e : all)
    if (!(e.kernel_hash == entry.kernel_hash && e.target == entry.target && e.threads == entry.threads &&
          e.sizes == entry.sizes))
      text += line(e);
  text += line(entry);
  write_file_atomic(path_, text);
}

}  // namespace tessel
