#include "runtime/tensor_check.h"

#include <algorithm>
#include <cstdio>

#include "tessel/error.h"

namespace tessel {
namespace {

[[noreturn]] void bad(const TensorParam& t, const std::string& message) {
  user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "': " + message);
}

std::string dim_text(int d, const char* what, const Expr& e, int64_t v) {
  return std::string(what) + " of dim " + std::to_string(d) + " (" + expr_to_string(e) + ") is " +
         std::to_string(v);
}

}  // namespace

TensorLayout check_tensor(const TensorParam& t, const std::map<std::string, int64_t>& sizes) {
  if (t.shape.empty() || t.shape.size() != t.strides.size())
    bad(t, "rank " + std::to_string(t.shape.size()) + " with " + std::to_string(t.strides.size()) +
               " strides");
  SymbolLookup lookup = [&](const std::string& name, int64_t* v) {
    auto it = sizes.find(name);
    if (it == sizes.end()) return false;
    *v = it->second;
    return true;
  };
  auto eval = [&](const Expr& e, int d, const char* what) {
    expr_symbols(e, [&](const std::string& s) {
      if (!sizes.count(s))
        bad(t, "missing size parameter '" + s + "' (in the " + what + " of dim " +
                   std::to_string(d) + ": " + expr_to_string(e) + ")");
    });
    return expr_eval(e, lookup);
  };
  TensorLayout out;
  const int rank = t.rank();
  for (int d = 0; d < rank; ++d) {
    int64_t extent = eval(t.shape[d], d, "extent"), stride = eval(t.strides[d], d, "stride");
    if (extent < 0) bad(t, dim_text(d, "extent", t.shape[d], extent) + ", negative");
    if (stride < 0) bad(t, dim_text(d, "stride", t.strides[d], stride) + ", negative");
    out.shape.push_back(extent);
    out.strides.push_back(stride);
  }
  if (std::count(out.shape.begin(), out.shape.end(), 0)) return out;  // no element
  // The last element's offset, checked for overflow.
  int64_t last = 0;
  for (int d = 0; d < rank; ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(out.shape[d] - 1, out.strides[d], &step) ||
        __builtin_add_overflow(last, step, &last) || last == INT64_MAX)
      bad(t, "the offset of its last element overflows 64 bits (dim " + std::to_string(d) +
                 ": extent " + std::to_string(out.shape[d]) + ", stride " +
                 std::to_string(out.strides[d]) + ")");
  }
  out.elements = last + 1;
  if (t.access == Access::In) return out;
  // A written tensor: no two index tuples at one address (the header's test).
  std::vector<int> dims;
  for (int d = 0; d < rank; ++d)
    if (out.shape[d] > 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int a, int b) { return out.strides[a] < out.strides[b]; });
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i];
    if (out.strides[d] == 0)
      bad(t, "it is written (" + std::string(access_name(t.access)) + ") but " +
                 dim_text(d, "stride", t.strides[d], 0) + " with extent " +
                 std::to_string(out.shape[d]) + ": its elements would share addresses");
    if (i == 0) continue;
    int p = dims[i - 1];
    // stride(d) >= stride(p) * extent(p), divided through so that it cannot overflow.
    if (out.strides[d] / out.shape[p] < out.strides[p])
      bad(t, "it is written (" + std::string(access_name(t.access)) + ") but its elements " +
                 "overlap: " + dim_text(d, "stride", t.strides[d], out.strides[d]) +
                 ", less than dim " + std::to_string(p) + "'s stride " +
                 std::to_string(out.strides[p]) + " times its extent " +
                 std::to_string(out.shape[p]));
  }
  return out;
}

void check_tensor_overlap(const std::vector<TensorSpan>& tensors) {
  struct Range {
    const TensorSpan* t;
    unsigned __int128 begin, end;  // bytes, end exclusive
  };
  std::vector<Range> ranges;
  for (const TensorSpan& t : tensors) {
    TESSEL_ASSERT(t.param, "a tensor span without its parameter");
    if (t.layout.elements <= 0) continue;  // no element, no memory
    int bytes = t.element_bytes > 0 ? t.element_bytes : dtype_bytes(t.param->dtype);
    unsigned __int128 begin = t.base;
    ranges.push_back({&t, begin, begin + static_cast<unsigned __int128>(t.layout.elements) * bytes});
  }
  // Sorted by start, each range is checked against the ones before it that have
  // not ended; with no written overlap they are few (read-only ones may pile up).
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  auto text = [](const Range& r) {
    auto hex = [](unsigned __int128 v) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
      return v >> 64 ? std::string("past 2^64") : std::string(buf);
    };
    return "tensor '" + r.t->param->name + "' (" + access_name(r.t->param->access) + ", bytes [" +
           hex(r.begin) + ", " + hex(r.end) + "))";
  };
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i; j-- > 0;) {
      const Range &a = ranges[j], &b = ranges[i];
      if (a.end <= b.begin) continue;
      if (a.t->param->access == Access::In && b.t->param->access == Access::In) continue;
      if (a.t->param->may_overlap_with(b.t->param->name) || b.t->param->may_overlap_with(a.t->param->name))
        continue;  // declared by the kernel
      user_error(ErrorKind::InvalidArgument,
                 text(a) + " and " + text(b) + " overlap in memory, and " +
                     (a.t->param->access != Access::In ? "'" + a.t->param->name + "'"
                                                       : "'" + b.t->param->name + "'") +
                     " is written; a kernel's written tensors may not share memory with any other "
                     "tensor argument");
    }
}

void check_fixed_sizes(const std::string& kernel, const std::vector<std::pair<std::string, int64_t>>& fixed,
                       const std::map<std::string, int64_t>& sizes) {
  for (const auto& [name, value] : fixed) {
    auto it = sizes.find(name);
    if (it == sizes.end() || it->second != value)
      user_error(ErrorKind::InvalidArgument,
                 "kernel " + kernel + " was compiled for " + name + " = " + std::to_string(value) +
                     " (its plan fixes the size), the launch gives " +
                     (it == sizes.end() ? std::string("none") : std::to_string(it->second)));
  }
}

}  // namespace tessel
