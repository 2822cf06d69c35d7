// The tuning cache: measured winners per kernel, target, thread count and shape,
// kept on disk beside the kernel cache (runtime/kernel_cache.h) under the same rules:
// the directory must be owned by this user and not writable by group or others, the
// file is read only when it is a regular file this user owns that nobody else can
// write, and it is replaced atomically (an exclusive temporary file, then a rename).
// An unsafe directory is refused with a user error (ErrorKind::Runtime) saying why.
//
// File: <dir>/tuning-v1.txt, one line per measured shape:
//   <kernel hash> <target> <threads> <sizes NAME=V,...> <best us> <plan>
// A shape class is each size rounded up to a power of two; lookup prefers the exact
// shape, then the nearest shape of its class (log distance).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/tile_ir.h"
#include "plan/plan.h"

namespace tessel {

// A plan as one word-separated line ("tiles=BK:32,BM:64 workers=1 grid=1x1 batch=4
// window=1 async=0 atom=fma:12x32 frag=1", then "tma=1 producers=P", "cluster=C",
// "persistent=G band=B" and "direct=1" when set) and back; a malformed line is a user error
// (InvalidArgument).
std::string plan_to_line(const Plan& p);
Plan plan_from_line(const std::string& line, TargetKind target);

struct TunedShape {
  std::string kernel_hash;
  TargetKind target = TargetKind::Cpu;
  int threads = 0;
  std::map<std::string, int64_t> sizes;
  double best_us = 0;
  Plan plan;
};

std::string kernel_hash(const TileKernel& kernel);  // of its TileIR text, source locations left out

// The best entry of `entries` for a kernel, target, thread count and shape: the exact
// shape, else the nearest of its class; nullopt when none (TuningCache::lookup).
std::optional<TunedShape> best_tuned_shape(const std::vector<TunedShape>& entries, const std::string& kernel_hash,
                                           TargetKind target, int threads,
                                           const std::map<std::string, int64_t>& sizes, bool* exact = nullptr);

// TuningCache().lookup for callers on a hot path (a library front door choosing a
// plan per new shape): the default directory's file is parsed once and kept, and
// parsed again only when its size or modification time changes (one stat a call).
// An unusable directory or file reads as no entry, as for dispatch_plan.
std::optional<TunedShape> lookup_tuned_shape(const std::string& kernel_hash, TargetKind target, int threads,
                                             const std::map<std::string, int64_t>& sizes, bool* exact = nullptr);

class TuningCache {
 public:
  // dir "" = the kernel cache directory (kernel_cache_dir()).
  explicit TuningCache(std::string dir = "");
  const std::string& path() const { return path_; }
  // The exact shape, else the nearest of its class; nullopt when none.
  std::optional<TunedShape> lookup(const std::string& kernel_hash, TargetKind target, int threads,
                                   const std::map<std::string, int64_t>& sizes, bool* exact = nullptr) const;
  // Adds or replaces the entry for its shape and writes the file.
  void record(const TunedShape& entry);
  std::vector<TunedShape> entries() const;

 private:
  std::string dir_, path_;
};

}  // namespace tessel
