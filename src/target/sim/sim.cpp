// The sim interpreter: runs every group of the grid, one after another, each with
// program.workers simulated workers. An op that workers share (copy, fragment ops,
// mma, elementwise) runs worker by worker in an order shuffled per op, so that a
// program whose result depends on that order shows it; every shared and global
// access goes through the race detector.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "target/sim/race_detector.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
const float kPoison = std::numeric_limits<float>::quiet_NaN();

struct Tensor {
  float* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
};

// A BufferRef with its expressions evaluated.
struct Window {
  const Buffer* buffer = nullptr;
  int version = 0;
  int64_t row = 0, col = 0;
};

// An element written by an async copy that has not landed yet.
struct PendingWrite {
  const GroupOp* op;
  int worker;
  uint32_t instance;
  int buffer, version;
  int64_t row, col, index;
  float value;
};

int64_t size_arg(const LaunchArgs& args, const std::string& name, const std::string& what) {
  auto it = args.sizes.find(name);
  if (it == args.sizes.end())
    user_error(ErrorKind::InvalidArgument, "missing size parameter '" + name + "'" + what);
  if (it->second < 0)
    user_error(ErrorKind::InvalidArgument, "size parameter '" + name + "' is negative (" +
                                               std::to_string(it->second) + ")");
  return it->second;
}

std::vector<Tensor> validate_args(const GroupProgram& p, const LaunchArgs& args) {
  for (const std::string& s : p.size_params) size_arg(args, s, "");
  for (const ScalarParam& s : p.scalars)
    if (!args.scalars.count(s.name))
      user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + s.name + "'");
  std::vector<Tensor> tensors;
  for (const TensorParam& t : p.tensors) {
    auto it = args.tensors.find(t.name);
    if (it == args.tensors.end())
      user_error(ErrorKind::InvalidArgument, "missing tensor '" + t.name + "'");
    if (it->second == nullptr)
      user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "' is a null pointer");
    std::string of = " (of tensor '" + t.name + "')";
    Tensor x{it->second, size_arg(args, t.rows, of), size_arg(args, t.cols, of),
             size_arg(args, t.ld, of)};
    if (x.rows > 1 && x.ld < x.cols)
      user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "': ld " + t.ld + " = " +
                                                 std::to_string(x.ld) + " is less than cols " +
                                                 t.cols + " = " + std::to_string(x.cols));
    tensors.push_back(x);
  }
  return tensors;
}

bool compare(CmpOp op, double a, double b) {
  switch (op) {
    case CmpOp::EQ: return a == b;
    case CmpOp::NE: return a != b;
    case CmpOp::LT: return a < b;
    case CmpOp::LE: return a <= b;
    case CmpOp::GT: return a > b;
    case CmpOp::GE: return a >= b;
  }
  return false;
}

std::string op_name(const GroupOp& op) {
  return std::string(group_op_name(op.kind)) + " #" + std::to_string(op.id);
}

class Interpreter {
 public:
  Interpreter(const GroupProgram& program, const LaunchArgs& args, const SimOptions& options)
      : p_(program),
        args_(args),
        tensors_(validate_args(program, args)),
        detector_(program, tensor_shapes(), options.max_races_recorded),
        rng_(options.seed) {
    TESSEL_ASSERT(p_.workers >= 1, "a group program needs at least one worker");
    order_.resize(p_.workers);
    mma_groups_.resize(p_.workers);
    std::iota(order_.begin(), order_.end(), 0);
    for (const auto& [name, value] : args.sizes) scope_.emplace_back(name, value);
    lookup_ = [this](const std::string& name, int64_t* value) {
      for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
        if (it->first != name) continue;
        *value = it->second;
        return true;
      }
      return false;
    };
    shared_.resize(p_.buffers.size());
    frags_.resize(p_.buffers.size());
    parts_.resize(p_.buffers.size());
    for (const Buffer& b : p_.buffers) {
      if (b.space == Space::Shared) shared_[b.id].resize(b.versions * b.rows * b.cols);
      if (b.space != Space::Private) continue;
      for (int w = 0; w < p_.workers; ++w) parts_[b.id].push_back(frag_part(p_, b, w));
      const FragPart& part = parts_[b.id][0];
      frags_[b.id].resize(p_.workers * part.rows * part.cols);
    }
  }

  SimResult run() {
    std::vector<int64_t> extent;
    for (const LoopDim& d : p_.grid) extent.push_back(eval(d.extent));
    for (int64_t e : extent)
      if (e <= 0) return detector_.result();
    std::vector<int64_t> point(extent.size(), 0);
    for (int group = 0;; ++group) {
      for (size_t d = 0; d < point.size(); ++d) scope_.emplace_back(p_.grid[d].iv, point[d]);
      run_group(group);
      scope_.resize(scope_.size() - point.size());
      // Next grid point, the last dimension fastest.
      size_t d = point.size();
      while (d > 0 && ++point[d - 1] == extent[d - 1]) point[--d] = 0;
      if (d == 0) break;
    }
    return detector_.result();
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> tensor_shapes() const {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (const Tensor& t : tensors_) shapes.emplace_back(t.rows, t.cols);
    return shapes;
  }

  void run_group(int group) {
    detector_.begin_group(group);
    // Fresh memory is poison, so a program that reads what it never wrote shows it.
    for (auto& s : shared_) std::fill(s.begin(), s.end(), kPoison);
    for (auto& f : frags_) std::fill(f.begin(), f.end(), kPoison);
    run_ops(p_.body);
    // Copies never waited for still land, so the group's results stay complete;
    // any access to them was already reported.
    committed_.push_back(std::move(open_));
    open_.clear();
    for (auto& writes : committed_)
      for (const PendingWrite& pw : writes) {
        detector_.async_land(pw.buffer, pw.index, pw.instance);
        shared_[pw.buffer][pw.index] = pw.value;
      }
    committed_.clear();
    for (int w = 0; w < p_.workers; ++w)
      for (const InFlightMma& m : mma_groups_[w]) detector_.accumulator_race(m.op, -1, w, p_.buffer(m.frag).name);
    GroupOp end_of_group;
    end_of_group.pending = 0;
    mma_wait(end_of_group);
  }

  // An async mma owns its accumulator until its mma.wait: an op that touches that
  // fragment before then reads or writes registers the mma is still writing.
  void check_accumulators(const GroupOp& op) {
    std::vector<int> frags;
    if (op.kind == GroupOpKind::FragFill || op.kind == GroupOpKind::FragLoad ||
        op.kind == GroupOpKind::FragStore || op.kind == GroupOpKind::Elementwise)
      frags.push_back(op.frag);
    if (op.kind == GroupOpKind::Elementwise)
      for (const EwOperand& o : op.operands)
        if (o.kind == EwOperand::Kind::Frag) frags.push_back(o.frag);
    for (int w = 0; w < p_.workers; ++w)
      for (const InFlightMma& m : mma_groups_[w])
        if (std::find(frags.begin(), frags.end(), m.frag) != frags.end()) {
          detector_.accumulator_race(m.op, op.id, w, p_.buffer(m.frag).name);
          break;
        }
  }

  void run_ops(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) run_op(op);
  }

  void run_op(const GroupOp& op) {
    check_accumulators(op);
    switch (op.kind) {
      case GroupOpKind::Copy: return copy(op);
      case GroupOpKind::AsyncCommit:
        committed_.push_back(std::move(open_));
        open_.clear();
        return;
      case GroupOpKind::AsyncWait: return async_wait(op);
      case GroupOpKind::FragFill:
        private_buffer(op.frag, op);
        for (int w : shuffled()) {
          float* f = frag(op.frag, w);
          std::fill(f, f + part_elements(op.frag, w), static_cast<float>(op.constant));
        }
        return;
      case GroupOpKind::FragLoad: return frag_load(op);
      case GroupOpKind::FragStore: return frag_store(op);
      case GroupOpKind::Mma: return mma(op);
      case GroupOpKind::MmaWait: return mma_wait(op);
      case GroupOpKind::Elementwise: return elementwise(op);
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier: return detector_.new_interval();
      case GroupOpKind::Call:
        user_error(ErrorKind::Unsupported, "the sim cannot run " + op_name(op) + " to '" +
                                               op.callee + "'");
      case GroupOpKind::For: {
        int64_t lo = eval(op.lo), hi = eval(op.hi);
        scope_.emplace_back(op.iv, lo);
        for (int64_t i = lo; i < hi; ++i) {
          scope_.back().second = i;
          run_ops(op.bodies.at(0));
        }
        scope_.pop_back();
        return;
      }
      case GroupOpKind::If:
        if (holds(op.cond)) return run_ops(op.bodies.at(0));
        if (op.bodies.size() > 1) run_ops(op.bodies[1]);
        return;
    }
  }

  // --- expressions -------------------------------------------------------------

  int64_t eval(const Expr& e) { return expr_eval(e, lookup_); }
  int64_t bound(const Expr& e) { return e ? eval(e) : kUnbounded; }

  bool holds(const Cond& c) {
    if (!c.on_scalar) return compare(c.op, double(eval(c.lhs)), double(eval(c.rhs)));
    auto it = args_.scalars.find(c.scalar);
    if (it == args_.scalars.end())
      user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + c.scalar + "'");
    return compare(c.op, it->second, c.value);
  }

  const std::vector<int>& shuffled() {
    std::shuffle(order_.begin(), order_.end(), rng_);
    return order_;
  }

  // --- memory ------------------------------------------------------------------

  Window resolve(const BufferRef& ref, const GroupOp& op) {
    const Buffer& b = p_.buffer(ref.buffer);
    Window w{&b, ref.version ? static_cast<int>(eval(ref.version)) : 0, eval(ref.row),
             eval(ref.col)};
    int versions = b.space == Space::Shared ? b.versions : 1;
    if (w.version < 0 || w.version >= versions)
      user_error(ErrorKind::Runtime, op_name(op) + ": version " + std::to_string(w.version) +
                                         " of " + b.name + " is outside [0, " +
                                         std::to_string(versions) + ")");
    if (b.space == Space::Private)
      user_error(ErrorKind::Verify, op_name(op) + ": " + b.name + " is a private fragment, " +
                                        "not a shared or global buffer");
    return w;
  }

  [[noreturn]] void outside(const GroupOp& op, const Buffer& b, int64_t r, int64_t c, bool write,
                            int64_t rows, int64_t cols) {
    user_error(ErrorKind::Runtime, op_name(op) + (write ? " writes " : " reads ") + b.name + "[" +
                                       std::to_string(r) + ", " + std::to_string(c) +
                                       "] outside its " + std::to_string(rows) + " x " +
                                       std::to_string(cols) + " extent");
  }

  // Offset of shared element (r, c) in the buffer's storage (all versions).
  int64_t shared_index(const Window& w, int64_t r, int64_t c, const GroupOp& op, bool write) {
    const Buffer& b = *w.buffer;
    if (r < 0 || c < 0 || r >= b.rows || c >= b.cols) outside(op, b, r, c, write, b.rows, b.cols);
    return w.version * b.rows * b.cols + layout_offset(b, r, c);
  }

  float* global_element(const Window& w, int64_t r, int64_t c, const GroupOp& op, bool write) {
    const Tensor& t = tensors_[w.buffer->tensor];
    if (r < 0 || c < 0 || r >= t.rows || c >= t.cols) outside(op, *w.buffer, r, c, write, t.rows, t.cols);
    detector_.global_access(w.buffer->tensor, r, c, op, write);
    return t.data + r * t.ld + c;
  }

  // Element (r, c), absolute in the buffer.
  float read(const Window& w, int64_t r, int64_t c, int worker, const GroupOp& op) {
    if (w.buffer->space == Space::Global) return *global_element(w, r, c, op, false);
    int64_t i = shared_index(w, r, c, op, false);
    detector_.shared_access(w.buffer->id, w.version, r, c, i, worker, op, false);
    return shared_[w.buffer->id][i];
  }

  void write(const Window& w, int64_t r, int64_t c, float value, int worker, const GroupOp& op) {
    if (w.buffer->space == Space::Global) {
      *global_element(w, r, c, op, true) = value;
      return;
    }
    int64_t i = shared_index(w, r, c, op, true);
    detector_.shared_access(w.buffer->id, w.version, r, c, i, worker, op, true);
    shared_[w.buffer->id][i] = value;
  }

  const Buffer& private_buffer(int id, const GroupOp& op) {
    const Buffer& b = p_.buffer(id);
    if (b.space != Space::Private)
      user_error(ErrorKind::Verify, op_name(op) + ": " + b.name + " is not a private fragment");
    return b;
  }
  // Every worker's part has the same size, except surplus workers, who own nothing.
  int64_t part_size(int frag) const { return parts_[frag][0].rows * parts_[frag][0].cols; }
  int64_t part_elements(int frag, int worker) const {
    return parts_[frag][worker].rows * parts_[frag][worker].cols;
  }
  float* frag(int id, int worker) { return frags_[id].data() + worker * part_size(id); }

  // --- ops ---------------------------------------------------------------------

  void copy(const GroupOp& op) {
    Window src = resolve(op.src, op), dst = resolve(op.dst, op);
    int64_t src_rows = bound(op.src_row_bound), src_cols = bound(op.src_col_bound);
    int64_t dst_rows = bound(op.dst_row_bound), dst_cols = bound(op.dst_col_bound);
    if (op.async && dst.buffer->space != Space::Shared)
      user_error(ErrorKind::Verify, op_name(op) + ": an async copy must write shared memory");
    TESSEL_ASSERT(op.batch >= 1, "copy batch must be positive");
    int64_t total = op.rows * op.cols, batch = op.batch, stride = batch * p_.workers;
    uint32_t instance = op.async ? ++async_instances_ : 0;
    for (int w : shuffled())
      for (int64_t start = w * batch; start < total; start += stride)
        for (int64_t e = start; e < std::min(total, start + batch); ++e) {
          int64_t i = e / op.cols, j = e % op.cols;
          int64_t dr = dst.row + i, dc = dst.col + j, sr = src.row + i, sc = src.col + j;
          if (dr >= dst_rows || dc >= dst_cols) continue;
          float v = sr < src_rows && sc < src_cols ? read(src, sr, sc, w, op) : 0.0f;
          if (!op.async) {
            write(dst, dr, dc, v, w, op);
            continue;
          }
          int64_t index = shared_index(dst, dr, dc, op, true);
          detector_.async_issue(dst.buffer->id, dst.version, dr, dc, index, w, op, instance);
          open_.push_back({&op, w, instance, dst.buffer->id, dst.version, dr, dc, index, v});
        }
  }

  // Retires the oldest committed groups until at most `pending` are in flight. The
  // data lands now: a write by the issuing worker in the current interval.
  void async_wait(const GroupOp& op) {
    TESSEL_ASSERT(op.pending >= 0, "async.wait pending must be non-negative");
    while (committed_.size() > static_cast<size_t>(op.pending)) {
      for (const PendingWrite& pw : committed_.front()) {
        detector_.async_land(pw.buffer, pw.index, pw.instance);
        detector_.shared_access(pw.buffer, pw.version, pw.row, pw.col, pw.index, pw.worker, *pw.op,
                                true);
        shared_[pw.buffer][pw.index] = pw.value;
      }
      committed_.pop_front();
    }
  }

  void frag_load(const GroupOp& op) {
    private_buffer(op.frag, op);
    Window src = resolve(op.src, op);
    int64_t rows = bound(op.src_row_bound), cols = bound(op.src_col_bound);
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      float* f = frag(op.frag, w);
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t j = 0; j < part.cols; ++j) {
          int64_t r = src.row + part.row0 + i, c = src.col + part.col0 + j;
          f[i * part.cols + j] = r < rows && c < cols ? read(src, r, c, w, op) : 0.0f;
        }
    }
  }

  void frag_store(const GroupOp& op) {
    private_buffer(op.frag, op);
    Window dst = resolve(op.dst, op);
    int64_t rows = bound(op.dst_row_bound), cols = bound(op.dst_col_bound);
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      const float* f = frag(op.frag, w);
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t j = 0; j < part.cols; ++j) {
          int64_t r = dst.row + part.row0 + i, c = dst.col + part.col0 + j;
          if (r < rows && c < cols) write(dst, r, c, f[i * part.cols + j], w, op);
        }
    }
  }

  // Each worker gathers the rows of a and the columns of b its part needs (one
  // recorded read per element), then accumulates in float, k in order, one
  // multiply and one add per step: the same arithmetic for every schedule of the
  // same k, so pipelined and plain programs agree bit for bit.
  void mma(const GroupOp& op) {
    private_buffer(op.frag, op);
    Window a = resolve(op.a, op), b = resolve(op.b, op);
    const int64_t k = op.k;
    const int64_t m_valid = op.m_valid ? eval(op.m_valid) : op.m;
    const int64_t n_valid = op.n_valid ? eval(op.n_valid) : op.n;
    const int64_t k_valid = op.k_valid ? eval(op.k_valid) : op.k;
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      if (part.rows == 0 || part.cols == 0) continue;
      a_.resize(part.rows * k);
      b_.resize(k * part.cols);
      if (op.async) mma_groups_[w].push_back(InFlightMma{op.frag, op.id, {}});
      auto get = [&](const Window& x, int64_t r, int64_t c) {
        if (!op.async || x.buffer->space != Space::Shared) return read(x, r, c, w, op);
        int64_t i = shared_index(x, r, c, op, false);
        detector_.async_read_begin(x.buffer->id, x.version, r, c, i, w, op);
        mma_groups_[w].back().reads.emplace_back(x.buffer->id, i);
        return shared_[x.buffer->id][i];
      };
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          a_[i * k + kk] = get(a, a.row + part.row0 + i, a.col + kk);
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < part.cols; ++j)
          b_[kk * part.cols + j] = get(b, b.row + kk, b.col + part.col0 + j);
      float* acc = frag(op.frag, w);
      // Elements outside the valid part are left as they were (GroupOp::m_valid).
      for (int64_t i = 0; i < std::min(part.rows, m_valid - part.row0); ++i)
        for (int64_t j = 0; j < std::min(part.cols, n_valid - part.col0); ++j) {
          float sum = acc[i * part.cols + j];
          for (int64_t kk = 0; kk < std::min(k, k_valid); ++kk) {
            float product = a_[i * k + kk] * b_[kk * part.cols + j];
            sum = sum + product;
          }
          acc[i * part.cols + j] = sum;
        }
    }
  }

  // Completes each worker's oldest async mmas until at most `pending` are in
  // flight: their operand reads end. (The sum itself was formed at issue; the
  // detector is what tells whether the operands stayed put until here.)
  void mma_wait(const GroupOp& op) {
    TESSEL_ASSERT(op.pending >= 0, "mma.wait pending must be non-negative");
    for (auto& groups : mma_groups_)
      while (groups.size() > static_cast<size_t>(op.pending)) {
        for (const auto& [buffer, index] : groups.front().reads) detector_.async_read_end(buffer, index);
        groups.pop_front();
      }
  }

  static float apply(EwOp op, float x, float y) {
    switch (op) {
      case EwOp::Add: return x + y;
      case EwOp::Sub: return x - y;
      case EwOp::Mul: return x * y;
      case EwOp::Max: return x < y ? y : x;
      case EwOp::Exp: return std::exp(x);
      case EwOp::Neg: return -x;
      case EwOp::Copy: return x;
    }
    return x;
  }

  void elementwise(const GroupOp& op) {
    const Buffer& dst = private_buffer(op.frag, op);
    size_t arity = op.ew == EwOp::Exp || op.ew == EwOp::Neg || op.ew == EwOp::Copy ? 1 : 2;
    if (op.operands.size() != arity)
      user_error(ErrorKind::Verify, op_name(op) + ": " + ew_op_name(op.ew) + " takes " +
                                        std::to_string(arity) + " operands, not " +
                                        std::to_string(op.operands.size()));
    // Scalars and constants are resolved once; fragments per worker.
    float value[2] = {0, 0};
    for (size_t n = 0; n < arity; ++n) {
      const EwOperand& o = op.operands[n];
      if (o.kind == EwOperand::Kind::Const) value[n] = static_cast<float>(o.value);
      if (o.kind == EwOperand::Kind::Scalar) {
        auto it = args_.scalars.find(o.scalar);
        if (it == args_.scalars.end())
          user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + o.scalar + "'");
        value[n] = static_cast<float>(it->second);
      }
      if (o.kind == EwOperand::Kind::Frag) {
        const Buffer& f = private_buffer(o.frag, op);
        if (f.rows != dst.rows || f.cols != dst.cols)
          user_error(ErrorKind::Verify, op_name(op) + ": operand " + f.name + " is not " +
                                            std::to_string(dst.rows) + " x " +
                                            std::to_string(dst.cols) + " like " + dst.name);
      }
    }
    for (int w : shuffled()) {
      int64_t size = part_elements(op.frag, w);
      const float* in[2] = {nullptr, nullptr};
      for (size_t n = 0; n < arity; ++n)
        if (op.operands[n].kind == EwOperand::Kind::Frag) in[n] = frag(op.operands[n].frag, w);
      float* out = frag(op.frag, w);
      for (int64_t e = 0; e < size; ++e) {
        float x = in[0] ? in[0][e] : value[0];
        float y = arity == 2 ? (in[1] ? in[1][e] : value[1]) : 0.0f;
        out[e] = apply(op.ew, x, y);
      }
    }
  }

  const GroupProgram& p_;
  const LaunchArgs& args_;
  std::vector<Tensor> tensors_;
  RaceDetector detector_;
  std::mt19937_64 rng_;
  std::vector<int> order_;
  std::vector<std::pair<std::string, int64_t>> scope_;  // innermost last
  SymbolLookup lookup_;
  std::vector<std::vector<float>> shared_;   // by buffer id: versions x layout
  std::vector<std::vector<float>> frags_;    // by buffer id: workers x part, row-major
  std::vector<std::vector<FragPart>> parts_; // by buffer id, by worker
  std::vector<float> a_, b_;                 // mma gather scratch
  std::vector<PendingWrite> open_;           // async copies not committed yet
  // Per worker: async mmas in flight, oldest first: the accumulator each writes and
  // the shared elements it reads.
  struct InFlightMma {
    int frag, op;
    std::vector<std::pair<int, int64_t>> reads;
  };
  std::vector<std::deque<InFlightMma>> mma_groups_;
  std::deque<std::vector<PendingWrite>> committed_;
  uint32_t async_instances_ = 0;
};

}  // namespace

SimResult run_sim(const GroupProgram& program, const LaunchArgs& args, const SimOptions& options) {
  return Interpreter(program, args, options).run();
}

}  // namespace tessel
