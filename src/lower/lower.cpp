#include "lower/lower.h"

#include <map>
#include <set>

#include "tessel/error.h"

namespace tessel {
namespace {

enum class Role { None, MmaA, MmaB };

// What a TileIR value became in GroupIR.
struct Lowered {
  enum class Kind { Frag, Scalar, Const, Staged } kind = Kind::Const;
  int buffer = -1;     // Frag: private buffer; Staged: shared buffer
  std::string scalar;  // Scalar
  double value = 0;    // Const
};

[[noreturn]] void fail(ErrorKind kind, const TileOp& op, const std::string& message) {
  std::string where = op.loc.to_string();
  user_error(kind, (where.empty() ? "" : where + ": ") + std::string(tile_op_name(op.kind)) +
                       ": " + message);
}

void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

class Lowering {
 public:
  Lowering(const TileKernel& kernel, const Plan& plan) : k_(kernel), plan_(plan) {}

  GroupProgram run() {
    bind_tile_params();
    count_uses();
    p_.name = k_.name;
    p_.size_params = k_.size_params;
    p_.tensors = k_.tensors;
    p_.scalars = k_.scalars;
    p_.workers = plan_.workers;
    p_.worker_rows = plan_.worker_rows;
    p_.worker_cols = plan_.worker_cols;
    p_.atom_m = plan_.atom_m;
    p_.atom_n = plan_.atom_n;
    p_.atom = plan_.atom;
    p_.lanes = atom_lanes(plan_.atom);
    p_.frag_buffers = plan_.frag_buffers;
    for (size_t t = 0; t < k_.tensors.size(); ++t) {
      Buffer b;
      b.id = static_cast<int>(p_.buffers.size());
      b.name = k_.tensors[t].name;
      b.space = Space::Global;
      b.dtype = k_.tensors[t].dtype;
      b.tensor = static_cast<int>(t);
      p_.buffers.push_back(b);
    }
    const TileOp* parallel = nullptr;
    for (const TileOp& op : k_.body.ops) {
      if (op.kind == TileOpKind::ScalarParam) {
        lowered_[op.results[0]] = Lowered{Lowered::Kind::Scalar, -1, op.param, 0};
      } else if (op.kind == TileOpKind::Parallel && !parallel) {
        parallel = &op;
      } else {
        fail(ErrorKind::Unsupported, op,
             "a kernel body holds scalar parameters and one parallel nest");
      }
    }
    if (!parallel)
      user_error(ErrorKind::Unsupported, "kernel " + k_.name + " has no parallel nest");
    for (const LoopDim& d : parallel->loops) p_.grid.push_back(LoopDim{d.iv, bind(d.extent)});
    lower_region(parallel->regions[0], p_.body);
    return p_;
  }

 private:
  // Tile parameters take the plan's extents where mma operands name them.
  void bind_tile_params() {
    auto bind_one = [&](const TileOp& op, const Expr& extent, int64_t value) {
      if (!extent || extent->kind != ExprKind::Sym) return;
      bool is_tile = false;
      for (const std::string& t : k_.tile_params) is_tile |= (t == extent->name);
      if (!is_tile) return;
      auto [it, fresh] = tile_values_.emplace(extent->name, value);
      if (!fresh && it->second != value)
        fail(ErrorKind::Plan, op, "tile parameter " + extent->name + " bound to both " +
                                      std::to_string(it->second) + " and " +
                                      std::to_string(value));
    };
    walk(k_.body, [&](const TileOp& op) {
      if (op.kind != TileOpKind::Mma) return;
      const TileType& a = k_.values.at(op.operands[0]).type;
      const TileType& b = k_.values.at(op.operands[1]).type;
      bind_one(op, a.shape[0], plan_.bm);
      bind_one(op, a.shape[1], plan_.bk);
      bind_one(op, b.shape[1], plan_.bn);
      role_[op.operands[0]] = Role::MmaA;
      role_[op.operands[1]] = Role::MmaB;
    });
    for (const std::string& t : k_.tile_params)
      if (!tile_values_.count(t))
        user_error(ErrorKind::Plan, "tile parameter " + t +
                                        " is not bound: the plan binds the extents of mma operands");
  }

  void count_uses() {
    walk(k_.body, [&](const TileOp& op) {
      for (int v : op.operands) ++uses_[v];
    });
  }

  Expr bind(const Expr& e) const {
    return expr_substitute(e, [&](const std::string& name) -> Expr {
      auto it = tile_values_.find(name);
      return it == tile_values_.end() ? nullptr : expr_const(it->second);
    });
  }

  int64_t static_extent(const TileOp& op, const Expr& e) const {
    int64_t v = 0;
    if (!expr_is_const(bind(e), &v) || v <= 0)
      fail(ErrorKind::Plan, op, "tile extent " + expr_to_string(e) +
                                    " must be a positive constant once the plan binds it");
    return v;
  }

  int tensor_buffer(const TileOp& op) const {
    int b = p_.find_buffer(op.param);
    if (b < 0 || p_.buffers[b].space != Space::Global)
      fail(ErrorKind::Verify, op, "unknown tensor " + op.param);
    return b;
  }

  const TensorParam& tensor_of(int buffer) const { return p_.tensors[p_.buffers[buffer].tensor]; }

  int new_buffer(const std::string& base, Space space, int64_t rows, int64_t cols) {
    Buffer b;
    b.id = static_cast<int>(p_.buffers.size());
    b.name = base;
    for (int n = 1; p_.find_buffer(b.name) >= 0; ++n) b.name = base + std::to_string(n);
    b.space = space;
    b.rows = rows;
    b.cols = cols;
    p_.buffers.push_back(b);
    return b.id;
  }

  GroupOp new_op(GroupOpKind kind) {
    GroupOp g;
    g.kind = kind;
    g.id = p_.new_op_id();
    return g;
  }

  void fence(std::vector<GroupOp>& out) { out.push_back(new_op(GroupOpKind::Fence)); }

  int new_frag(const TileOp& op, const TileType& type) {
    if (type.is_scalar()) fail(ErrorKind::Unsupported, op, "scalar arithmetic is not supported");
    return new_buffer("f", Space::Private, static_extent(op, type.shape[0]),
                      static_extent(op, type.shape[1]));
  }

  EwOperand operand(const TileOp& op, int value) const {
    auto it = lowered_.find(value);
    if (it == lowered_.end()) fail(ErrorKind::Verify, op, "use of an undefined value");
    const Lowered& l = it->second;
    EwOperand o;
    switch (l.kind) {
      case Lowered::Kind::Frag: o.kind = EwOperand::Kind::Frag; o.frag = l.buffer; break;
      case Lowered::Kind::Scalar: o.kind = EwOperand::Kind::Scalar; o.scalar = l.scalar; break;
      case Lowered::Kind::Const: o.kind = EwOperand::Kind::Const; o.value = l.value; break;
      case Lowered::Kind::Staged:
        fail(ErrorKind::Unsupported, op, "a tile loaded for mma cannot feed other ops");
    }
    return o;
  }

  // The fragment holding `value`, materialized if it is a constant or scalar.
  int frag_of(const TileOp& op, int value, std::vector<GroupOp>& out, const TileType& type) {
    EwOperand o = operand(op, value);
    if (o.kind == EwOperand::Kind::Frag) return o.frag;
    int f = new_frag(op, type);
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.frag = f;
    g.ew = EwOp::Copy;
    g.operands = {o};
    out.push_back(g);
    return f;
  }

  void copy_frag(int dst, int src, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.frag = dst;
    g.ew = EwOp::Copy;
    EwOperand o;
    o.kind = EwOperand::Kind::Frag;
    o.frag = src;
    g.operands = {o};
    out.push_back(g);
  }

  // A fragment the op may update in place: a copy when the value is used again.
  int owned_frag(const TileOp& op, int value, std::vector<GroupOp>& out) {
    const TileType& type = k_.values.at(value).type;
    int f = frag_of(op, value, out, type);
    if (uses_[value] <= 1) return f;
    int copy = new_frag(op, type);
    copy_frag(copy, f, out);
    return copy;
  }

  // An elementwise op writes into an operand's fragment when that value dies here:
  // this op is its only use, and it was defined in the region being lowered (a
  // value from an enclosing region is read again on the next trip of a loop in
  // between). Each element is read before it is written, so aliasing is safe.
  int in_place_frag(const TileOp& op) const {
    const TileType& type = k_.values.at(op.results[0]).type;
    if (type.is_scalar()) return -1;
    for (int v : op.operands) {
      auto it = lowered_.find(v);
      if (it == lowered_.end() || it->second.kind != Lowered::Kind::Frag) continue;
      auto use = uses_.find(v);
      auto def = defined_in_.find(v);
      if (use == uses_.end() || use->second != 1 || def == defined_in_.end() || def->second != region_)
        continue;
      const Buffer& f = p_.buffer(it->second.buffer);
      if (f.rows == static_extent(op, type.shape[0]) && f.cols == static_extent(op, type.shape[1]))
        return f.id;
    }
    return -1;
  }

  static bool touches_shared(const GroupProgram& p, const GroupOp& g) {
    auto shared = [&](const BufferRef& r) {
      return r.buffer >= 0 && p.buffer(r.buffer).space == Space::Shared;
    };
    switch (g.kind) {
      case GroupOpKind::Copy: return shared(g.src) || shared(g.dst);
      case GroupOpKind::FragLoad: return shared(g.src);
      case GroupOpKind::FragStore: return shared(g.dst);
      case GroupOpKind::Mma: return true;
      case GroupOpKind::For:
      case GroupOpKind::If:
        for (const auto& body : g.bodies)
          for (const GroupOp& inner : body)
            if (touches_shared(p, inner)) return true;
        return false;
      default: return false;
    }
  }

  void lower_region(const Region& region, std::vector<GroupOp>& out) {
    const Region* outer = region_;
    region_ = &region;
    for (int a : region.args) defined_in_[a] = &region;
    for (const TileOp& op : region.ops) {
      size_t first = out.size();
      lower_op(op, out);
      region_ = &region;  // nested regions set it while they lower
      for (int r : op.results) defined_in_[r] = &region;
      bool shared = false;
      for (size_t i = first; i < out.size(); ++i) shared |= touches_shared(p_, out[i]);
      if (shared && !(out.size() > first && out.back().kind == GroupOpKind::Fence)) fence(out);
    }
    region_ = outer;
  }

  void lower_op(const TileOp& op, std::vector<GroupOp>& out) {
    switch (op.kind) {
      case TileOpKind::ScalarParam:
        lowered_[op.results[0]] = Lowered{Lowered::Kind::Scalar, -1, op.param, 0};
        return;
      case TileOpKind::Const: {
        const TileType& type = k_.values.at(op.results[0]).type;
        if (type.is_scalar()) {
          lowered_[op.results[0]] = Lowered{Lowered::Kind::Const, -1, "", op.constant};
          return;
        }
        GroupOp g = new_op(GroupOpKind::FragFill);
        g.frag = new_frag(op, type);
        g.constant = op.constant;
        out.push_back(g);
        lowered_[op.results[0]] = Lowered{Lowered::Kind::Frag, g.frag, "", 0};
        return;
      }
      case TileOpKind::Load: return lower_load(op, out);
      case TileOpKind::Store: {
        int src = frag_of(op, op.operands[0], out, k_.values.at(op.operands[0]).type);
        int t = tensor_buffer(op);
        GroupOp g = new_op(GroupOpKind::FragStore);
        g.frag = src;
        g.dst = BufferRef{t, nullptr, bind(op.coords[0]), bind(op.coords[1])};
        g.dst_row_bound = expr_sym(tensor_of(t).rows);
        g.dst_col_bound = expr_sym(tensor_of(t).cols);
        out.push_back(g);
        stored_.insert(t);
        return;
      }
      case TileOpKind::Mma: {
        int acc = owned_frag(op, op.operands[2], out);
        auto staged = [&](int value) {
          auto it = lowered_.find(value);
          if (it == lowered_.end() || it->second.kind != Lowered::Kind::Staged)
            fail(ErrorKind::Unsupported, op, "mma operands must be tiles loaded from tensors");
          return it->second.buffer;
        };
        GroupOp g = new_op(GroupOpKind::Mma);
        g.frag = acc;
        g.a = BufferRef{staged(op.operands[0]), nullptr, expr_const(0), expr_const(0)};
        g.b = BufferRef{staged(op.operands[1]), nullptr, expr_const(0), expr_const(0)};
        g.m = p_.buffer(g.a.buffer).rows;
        g.k = p_.buffer(g.a.buffer).cols;
        g.n = p_.buffer(g.b.buffer).cols;
        set_valid_extents(g);
        out.push_back(g);
        lowered_[op.results[0]] = Lowered{Lowered::Kind::Frag, acc, "", 0};
        return;
      }
      case TileOpKind::Add: case TileOpKind::Sub: case TileOpKind::Mul:
      case TileOpKind::Max: case TileOpKind::Exp: case TileOpKind::Neg: {
        static const std::map<TileOpKind, EwOp> ew = {
            {TileOpKind::Add, EwOp::Add}, {TileOpKind::Sub, EwOp::Sub},
            {TileOpKind::Mul, EwOp::Mul}, {TileOpKind::Max, EwOp::Max},
            {TileOpKind::Exp, EwOp::Exp}, {TileOpKind::Neg, EwOp::Neg}};
        GroupOp g = new_op(GroupOpKind::Elementwise);
        g.ew = ew.at(op.kind);
        for (int v : op.operands) g.operands.push_back(operand(op, v));
        g.frag = in_place_frag(op);
        if (g.frag < 0) g.frag = new_frag(op, k_.values.at(op.results[0]).type);
        out.push_back(g);
        lowered_[op.results[0]] = Lowered{Lowered::Kind::Frag, g.frag, "", 0};
        return;
      }
      case TileOpKind::Serial:
      case TileOpKind::Pipeline: return lower_loop(op, out);
      case TileOpKind::If: return lower_if(op, out);
      case TileOpKind::Barrier: out.push_back(new_op(GroupOpKind::Barrier)); return;
      case TileOpKind::Parallel:
        fail(ErrorKind::Unsupported, op, "nested parallel nests are not supported");
      case TileOpKind::Yield: return;  // consumed by the enclosing op
    }
  }

  void lower_load(const TileOp& op, std::vector<GroupOp>& out) {
    int t = tensor_buffer(op);
    const TileType& type = k_.values.at(op.results[0]).type;
    const TensorParam& tensor = tensor_of(t);
    if (stored_.count(t)) fence(out);  // the group's own earlier stores must land first
    BufferRef src{t, nullptr, bind(op.coords[0]), bind(op.coords[1])};
    Role role = role_.count(op.results[0]) ? role_[op.results[0]] : Role::None;
    if (role == Role::None) {
      GroupOp g = new_op(GroupOpKind::FragLoad);
      g.frag = new_frag(op, type);
      g.src = src;
      g.src_row_bound = expr_sym(tensor.rows);
      g.src_col_bound = expr_sym(tensor.cols);
      out.push_back(g);
      lowered_[op.results[0]] = Lowered{Lowered::Kind::Frag, g.frag, "", 0};
      return;
    }
    int64_t rows = static_extent(op, type.shape[0]), cols = static_extent(op, type.shape[1]);
    int s = new_buffer(tensor.name + "s", Space::Shared, rows, cols);
    p_.buffers[s].dtype = tensor.dtype;  // staged as stored: the atom reads it
    if (role == Role::MmaB) {
      p_.buffers[s].layout = Layout::ColPanels;
      p_.buffers[s].panel = plan_.atom_n;
    }
    GroupOp g = new_op(GroupOpKind::Copy);
    g.src = src;
    g.dst = BufferRef{s, nullptr, expr_const(0), expr_const(0)};
    g.src_row_bound = expr_sym(tensor.rows);
    g.src_col_bound = expr_sym(tensor.cols);
    g.rows = rows;
    g.cols = cols;
    g.batch = plan_.copy_batch;
    out.push_back(g);
    staging_copy_[s] = g;
    lowered_[op.results[0]] = Lowered{Lowered::Kind::Staged, s, "", 0};
  }

  // Where the staging copies hit the tensors' edges, the mma skips what can only be
  // zeros (k) or is never stored (rows, cols): a ragged tile costs its data, not
  // the whole tile.
  void set_valid_extents(GroupOp& mma) const {
    auto extent = [](int64_t full, const Expr& bound, const Expr& origin) -> Expr {
      return bound ? expr_min(expr_const(full), bound - origin) : nullptr;
    };
    const GroupOp& a = staging_copy_.at(mma.a.buffer);
    const GroupOp& b = staging_copy_.at(mma.b.buffer);
    mma.m_valid = extent(mma.m, a.src_row_bound, a.src.row);
    mma.n_valid = extent(mma.n, b.src_col_bound, b.src.col);
    Expr ka = extent(mma.k, a.src_col_bound, a.src.col), kb = extent(mma.k, b.src_row_bound, b.src.row);
    mma.k_valid = ka && kb && !expr_equal(ka, kb) ? expr_min(ka, kb) : (ka ? ka : kb);
  }

  // The carried value lives in one fragment for the whole loop.
  void lower_loop(const TileOp& op, std::vector<GroupOp>& out) {
    if (op.regions.size() != 1 || op.operands.size() != 1 || op.loops.size() != 1)
      fail(ErrorKind::Verify, op, "a loop has one dimension, one region and one carried value");
    const Region& body = op.regions[0];
    if (body.ops.empty() || body.ops.back().kind != TileOpKind::Yield ||
        body.ops.back().operands.size() != 1 || body.args.size() != 1)
      fail(ErrorKind::Verify, op, "a loop body carries one value and ends with its yield");
    int carried = owned_frag(op, op.operands[0], out);
    lowered_[body.args[0]] = Lowered{Lowered::Kind::Frag, carried, "", 0};
    // A body that stores a tensor it also loads reads its previous iteration's store.
    walk(body, [&](const TileOp& inner) {
      if (inner.kind == TileOpKind::Store) {
        bool loaded = false;
        walk(body, [&](const TileOp& o) {
          loaded |= o.kind == TileOpKind::Load && o.param == inner.param;
        });
        if (loaded) stored_.insert(tensor_buffer(inner));
      }
    });
    GroupOp loop = new_op(GroupOpKind::For);
    loop.iv = op.loops[0].iv;
    loop.lo = expr_const(0);
    loop.hi = bind(op.loops[0].extent);
    loop.pipelined = op.kind == TileOpKind::Pipeline;
    loop.bodies.resize(1);
    lower_region(body, loop.bodies[0]);
    const TileOp& yield = body.ops.back();
    int next = frag_of(op, yield.operands[0], loop.bodies[0], k_.values.at(yield.operands[0]).type);
    if (next != carried) copy_frag(carried, next, loop.bodies[0]);
    out.push_back(std::move(loop));
    lowered_[op.results[0]] = Lowered{Lowered::Kind::Frag, carried, "", 0};
  }

  void lower_if(const TileOp& op, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::If);
    g.cond = op.cond;
    if (!g.cond.on_scalar) {
      g.cond.lhs = bind(g.cond.lhs);
      g.cond.rhs = bind(g.cond.rhs);
    }
    std::vector<int> results;
    for (int r : op.results) results.push_back(new_frag(op, k_.values.at(r).type));
    g.bodies.resize(2);
    // The branches exclude each other: a store in one is not earlier than a load
    // in the other. After the if, either may have run.
    std::set<int> stored_before = stored_, stored_after;
    for (int b = 0; b < 2; ++b) {
      stored_ = stored_before;
      lower_region(op.regions[b], g.bodies[b]);
      stored_after.insert(stored_.begin(), stored_.end());
      const auto& ops = op.regions[b].ops;
      if (!results.empty()) {
        if (ops.empty() || ops.back().kind != TileOpKind::Yield ||
            ops.back().operands.size() != results.size())
          fail(ErrorKind::Verify, op, "each branch ends with a yield of the if's results");
        const TileOp& yield = ops.back();
        for (size_t i = 0; i < results.size(); ++i) {
          int v = yield.operands[i];
          copy_frag(results[i], frag_of(op, v, g.bodies[b], k_.values.at(v).type), g.bodies[b]);
        }
      }
    }
    stored_ = stored_after;
    out.push_back(std::move(g));
    for (size_t i = 0; i < results.size(); ++i)
      lowered_[op.results[i]] = Lowered{Lowered::Kind::Frag, results[i], "", 0};
  }

  const TileKernel& k_;
  const Plan& plan_;
  GroupProgram p_;
  std::map<std::string, int64_t> tile_values_;
  std::map<int, Role> role_;
  std::map<int, int> uses_;
  std::map<int, Lowered> lowered_;
  std::map<int, GroupOp> staging_copy_;  // shared buffer -> the copy that fills it
  std::set<int> stored_;   // global buffers this group has stored
  std::map<int, const Region*> defined_in_;  // value -> the region whose op (or arg) defines it
  const Region* region_ = nullptr;           // the region being lowered
};

}  // namespace

GroupProgram lower_to_group(const TileKernel& kernel, const Plan& plan) {
  validate_plan(plan);
  return Lowering(kernel, plan).run();
}

}  // namespace tessel
