"""tessel from Python: compile tile kernels and call them on NumPy arrays and PyTorch
tensors (any DLPack array), with no copies. docs/python.md has the whole story.

    import numpy as np, tessel
    a, b = np.random.rand(100, 70).astype(np.float32), np.random.rand(70, 30).astype(np.float32)
    c = tessel.gemm(a, b)                       # on the arrays' device; cpu here
    y = tessel.softmax(a)                       # the library: softmax, layernorm, ...
    print(tessel.explain(tessel.library("softmax"), sizes={"M": 100, "N": 70}))

Errors from the C++ library are tessel.Error (with .kind: "InvalidArgument",
"Verify", "Parse", "Plan", "Compile", "Runtime", "Unsupported"); a wrong dtype is a
TypeError, a wrong shape or device a ValueError, each with the numbers.
"""
import atexit as _atexit
import os as _os
import sys as _sys

from . import _tessel
from ._tessel import (  # noqa: F401  (the public names)
    Kernel,
    KernelBuilder,
    LaunchReport,
    Plan,
    Sym,
    Tensor,
    Tile,
    TileKernel,
    ceil_div,
    default_gemm_plan,
    default_plan,
    sym_max,
    sym_min,
)

__version__ = _tessel.__version__
ERROR_KINDS = tuple(_tessel.error_kinds())


class Error(Exception):
    """A user error from tessel's C++ library; .kind says which (ERROR_KINDS)."""

    def __init__(self, message, kind):
        super().__init__(message)
        self.kind = kind

    def __reduce__(self):
        return (Error, (str(self), self.kind))


_tessel._set_error_class(Error)


@_atexit.register
def _release():
    # Drop what the module keeps (the error class, compiled kernels) before the
    # interpreter ends, so nanobind's leak check at exit stays meaningful.
    _compiled.clear()
    _kernel_info.clear()
    _library_cache.clear()
    _tessel._set_error_class(None)


# ---- kernels: from text, from the library -------------------------------------------

def parse(text):
    """A TileKernel from TileIR text (the kernels/*.tir form)."""
    return _tessel.parse_tile_kernel(text)


def load(path):
    """A TileKernel from a TileIR text file; a bare name ("softmax") loads the
    library's file shipped with the package (kernels/softmax.tir)."""
    if _os.sep not in path and not path.endswith(".tir"):
        path = _os.path.join(_os.path.dirname(__file__), "kernels", path + ".tir")
    return _tessel.load_tile_kernel(path)


_LIBRARY = {
    "softmax": lambda dtype: _tessel.softmax_kernel(dtype),
    "layernorm": lambda dtype: _tessel.layernorm_kernel(dtype),
    "row_sum": lambda dtype: _tessel.row_sum_kernel(),
    "col_sum": lambda dtype: _tessel.col_sum_kernel(),
    "add_broadcast": lambda dtype: _tessel.add_broadcast_kernel(),
    "gemm_strided": lambda dtype: _tessel.gemm_strided_kernel(),
    "batched_gemm": lambda dtype: _tessel.batched_gemm_kernel(),
    "gemm_bias_rows": lambda dtype: _tessel.gemm_epilogue_kernel("rows", "none"),
    "gemm_bias_rows_relu": lambda dtype: _tessel.gemm_epilogue_kernel("rows", "relu"),
    "gemm_bias_rows_gelu": lambda dtype: _tessel.gemm_epilogue_kernel("rows", "gelu"),
    "gemm_bias_cols": lambda dtype: _tessel.gemm_epilogue_kernel("cols", "none"),
    "gemm_bias_cols_relu": lambda dtype: _tessel.gemm_epilogue_kernel("cols", "relu"),
    "gemm_bias_cols_gelu": lambda dtype: _tessel.gemm_epilogue_kernel("cols", "gelu"),
    "attention": lambda dtype: _tessel.attention_kernel(False),
    "attention_causal": lambda dtype: _tessel.attention_kernel(True),
}
_library_cache = {}


def library(name, dtype="float32"):
    """The library's kernel `name` (src/ops/library.h) as a TileKernel, captured once."""
    key = (name, dtype)
    k = _library_cache.get(key)
    if k is None:
        if name not in _LIBRARY:
            raise ValueError("no library kernel %r (%s)" % (name, ", ".join(sorted(_LIBRARY))))
        k = _library_cache[key] = _LIBRARY[name](dtype)
    return k


# ---- compile, run, explain -------------------------------------------------------------

def _plan_for(kernel, target, plan, sizes):
    if plan is not None:
        if target is not None and target != plan.target:
            raise ValueError("target=%r but plan.target is %r" % (target, plan.target))
        return plan
    if sizes is None:
        raise ValueError("the default plan needs the sizes: give sizes={...} or plan=")
    return default_plan(kernel, target or "cpu", sizes)


def compile(kernel, target=None, plan=None, sizes=None, coalesce_barriers=True):
    """A Kernel (call it with arrays) for `plan`, or for the default plan of `target`
    (default "cpu") at `sizes` ({"M": 100, ...}). Compiles are cached (in memory, and
    on disk for cpu and cuda)."""
    return _tessel.compile_plan(kernel, _plan_for(kernel, target, plan, sizes), coalesce_barriers)


def explain(kernel, target=None, plan=None, sizes=None, stages=False):
    """What `tessel explain` prints: the TileIR, the plan, the GroupIR after every
    compile step and what the target compiles. With stages=True, a list of
    (stage name, text) pairs instead of one text. `kernel` is a TileKernel (with
    target/plan/sizes as for compile) or a compiled Kernel."""
    if not isinstance(kernel, Kernel):
        kernel = compile(kernel, target, plan, sizes)
    text = kernel.explain()
    return _stages(text) if stages else text


def _stages(text):
    out, name, lines = [], None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("// ---- ") and line.rstrip().endswith(" ----"):
            if name is not None:
                out.append((name, "".join(lines)))
            name, lines = line.strip()[8:-5], []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out.append((name, "".join(lines)))
    return out


# run()'s caches, by id(kernel); each entry holds the kernel, so the id stays its own.
_compiled = {}  # (id(kernel), target, plan, sizes) -> (kernel, Kernel)
_kernel_info = {}  # id(kernel) -> (kernel, tensor names)


def run(kernel, target=None, plan=None, sizes=None, threads=0, **args):
    """Compiles `kernel` (a TileKernel) for the arrays in `args` (by tensor name;
    scalars by name too) and runs it: the default plan of the arrays' device unless
    target= or plan= says otherwise; sizes the arrays do not bind go in `sizes`.
    Compiled kernels are kept per kernel, target, plan and sizes."""
    info = _kernel_info.get(id(kernel))
    if info is None or info[0] is not kernel:
        if len(_kernel_info) > 512:
            _kernel_info.clear()
        info = _kernel_info[id(kernel)] = (kernel, [t["name"] for t in kernel.tensors])
    arrays = {n: args[n] for n in info[1] if n in args}
    if target is None and plan is not None:
        target = plan.target
    target, all_sizes = _tessel.launch_sizes(kernel, _exported_args(arrays), target or "")
    if sizes:
        all_sizes.update(sizes)
    key = (id(kernel), target, None if plan is None else str(plan) + plan.target,
           tuple(sorted(all_sizes.items())))
    hit = _compiled.get(key)
    if hit is None or hit[0] is not kernel:
        if len(_compiled) > 512:
            _compiled.clear()
        hit = _compiled[key] = (kernel, compile(kernel, target, plan, all_sizes))
    launch_sizes = {k: v for k, v in (sizes or {}).items()}
    return _on_stream(hit[1], list(arrays.values()), args, launch_sizes, threads)


# ---- PyTorch tensors: DLPack capsules and CUDA streams ----------------------------------
#
# What the binding is handed, decided once per array type: NumPy's arrays (any type that
# is not a PyTorch tensor) go as they are; PyTorch tensors as the DLPack capsule
# torch._C._to_dlpack makes (0.3 us), since Tensor.__dlpack__ costs about 2.5 us a
# tensor on the host and more on CUDA, where it orders PyTorch's streams in Python on
# every call; tessel orders them itself (_on_stream, gemm). A tensor that requires grad
# still goes through __dlpack__, which decides whether it may be exported (older
# PyTorch refuses, with its own message).

_plain = set()          # array types passed as they are
_tensor_types = set()   # PyTorch's tensor types (torch.Tensor and its subclasses)
_to_dlpack = None       # PyTorch's capsule maker
_raw_stream = None      # device index -> the raw handle of PyTorch's current stream there


def _classify(t):
    """Files array type t under _plain or _tensor_types; whether it is PyTorch's."""
    global _to_dlpack, _raw_stream
    torch = _sys.modules.get("torch")
    if torch is None or not issubclass(t, torch.Tensor):
        _plain.add(t)
        return False
    if _to_dlpack is None:
        _to_dlpack = getattr(torch._C, "_to_dlpack", None) or torch.utils.dlpack.to_dlpack
        # The raw-handle query costs a fraction of a microsecond; building two Stream
        # objects to compare costs several.
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _raw_stream_public
    _tensor_types.add(t)
    return True


def _raw_stream_public(device):
    import torch
    current = torch.cuda.current_stream(device)
    return 0 if current == torch.cuda.default_stream(device) else current.cuda_stream or 1


def _exported(x, what, prefix="tensor "):
    """x as the binding takes it: a PyTorch tensor as a DLPack capsule, anything else
    as it is. `prefix + what` names x in the error for a tensor PyTorch does not
    export (a meta tensor: PyTorch raises BufferError)."""
    t = type(x)
    if t in _plain or (t not in _tensor_types and not _classify(t)) or x.requires_grad:
        return x
    try:
        return _to_dlpack(x)
    except BufferError as e:
        raise ValueError("%s%s is a PyTorch tensor on %s, which PyTorch does not export through DLPack; "
                         "tessel launches on the host and on CUDA device 0 (%s)"
                         % (prefix, what, x.device, e)) from None


def _off_default_stream(x):
    """Whether x is a PyTorch CUDA tensor while PyTorch's current stream is not CUDA's
    default stream (raw handle 0), where tessel launches. tessel launches on CUDA device
    0 only (an array on another is refused), so that is the device asked about."""
    return type(x) in _tensor_types and x.is_cuda and _raw_stream(0) != 0


def _on_stream(kernel, arrays, args, sizes, threads):
    """Runs a compiled kernel. tessel launches on CUDA's default stream (its C++ API
    takes no stream); a PyTorch tensor on another current stream is ordered by
    making the default stream wait for it and it for the default stream."""
    if arrays and _off_default_stream(arrays[0]):
        import torch
        current = torch.cuda.current_stream(arrays[0].device)
        default = torch.cuda.default_stream(arrays[0].device)
        if current != default:
            default.wait_stream(current)
            report = kernel(threads=threads, **sizes, **_exported_args(args))
            current.wait_stream(default)
            return report
    return kernel(threads=threads, **sizes, **_exported_args(args))


def _exported_args(args):
    if not _tensor_types and "torch" not in _sys.modules:  # no PyTorch tensor to export
        return args
    return {k: _exported(v, k) for k, v in args.items()}


# ---- array helpers -------------------------------------------------------------------

def _empty(like, shape, name):
    """A fresh array like `like` (NumPy or PyTorch: its type, dtype and device)."""
    module = type(like).__module__
    if module.startswith("torch"):
        import torch
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if module.startswith("numpy"):
        import numpy
        return numpy.empty(shape, dtype=like.dtype)
    raise TypeError("%s: cannot allocate the output for a %s; pass out=" % (name, type(like).__name__))


def _shape(x, name, rank):
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError("%s must be an array (NumPy, PyTorch or any DLPack tensor), got %s"
                        % (name, type(x).__name__))
    shape = tuple(shape)
    if len(shape) != rank:
        raise ValueError("%s must be %d-D, its shape is %s" % (name, rank, shape))
    return shape


def _expect(what, got, want):
    if tuple(got) != tuple(want):
        raise ValueError("%s is %s, expected %s" % (what, tuple(got), tuple(want)))


# ---- GEMM and the library's kernels on arrays ---------------------------------------

def gemm(a, b, out=None, alpha=1.0, beta=0.0, target=None, plan=None, threads=0):
    """out = alpha * a @ b + beta * out, float32, on the arrays' device (or `target`:
    "cpu", "sim", "cuda"). Row-major operands with any leading dimension run
    tessel::gemm (src/ops/gemm.h); other strides (a transposed view ...) run the
    strided GEMM kernel, which computes a @ b only (alpha 1, beta 0). beta = 0 never
    reads out. Returns out."""
    if out is None:
        if beta != 0:
            raise ValueError("gemm: beta = %g reads out, but out is None" % beta)
        m = _shape(a, "gemm: a", 2)[0]
        n = _shape(b, "gemm: b", 2)[1]
        out = _empty(a, (m, n), "gemm")
    # The binding is called from here, without helper calls, for the two common cases.
    ta, tb, tout = type(a), type(b), type(out)
    plain = _plain
    if ta in plain and tb in plain and tout in plain:  # NumPy's arrays, ...
        if _gemm_rowmajor(a, b, out, alpha, beta, target or "", plan, threads):
            return out
    else:
        tensors = _tensor_types
        if (ta in tensors and tb in tensors and tout in tensors
                and not (a.requires_grad or b.requires_grad or out.requires_grad)):  # PyTorch's
            if a.is_cuda and _raw_stream(0) != 0:
                # Through run() for its stream handling; tessel::gemm itself has no stream.
                return _gemm_strided(a, b, out, alpha, beta, target, plan, "a non-default CUDA stream")
            export = _to_dlpack
            try:
                xa, xb, xout = export(a), export(b), export(out)
            except BufferError:  # a tensor PyTorch does not export: _exported says which
                xa, xb, xout = _gemm_exported(a, b, out)
        else:  # mixed, or seen for the first time
            xa, xb, xout = _gemm_exported(a, b, out)
            if _off_default_stream(a):
                return _gemm_strided(a, b, out, alpha, beta, target, plan, "a non-default CUDA stream")
        if _gemm_rowmajor(xa, xb, xout, alpha, beta, target or "", plan, threads):
            return out
    return _gemm_strided(a, b, out, alpha, beta, target, plan, "operands that are not row-major")


_gemm_rowmajor = _tessel.gemm_rowmajor


def _gemm_exported(a, b, out):
    return _exported(a, "gemm: a", ""), _exported(b, "gemm: b", ""), _exported(out, "gemm: out", "")


def _gemm_strided(a, b, out, alpha, beta, target, plan, why):
    if alpha != 1 or beta != 0:
        raise ValueError("gemm: alpha = %g, beta = %g need row-major operands with unit column "
                         "stride on the default stream; %s compute a @ b only (strides: a %s, b %s, "
                         "out %s)" % (alpha, beta, why, _strides(a), _strides(b), _strides(out)))
    run(library("gemm_strided"), target=target, plan=plan, A=a, B=b, C=out)
    return out


def _strides(x):
    s = x.stride() if callable(getattr(x, "stride", None)) else getattr(x, "strides", None)
    if s is not None and type(x).__module__.startswith("numpy"):
        s = tuple(v // x.itemsize for v in s)
    return tuple(s) if s is not None else None


def softmax(x, out=None, target=None, plan=None):
    """Softmax of each row of x [M, N] (float32 or float64)."""
    shape = _shape(x, "softmax: x", 2)
    if out is None:
        out = _empty(x, shape, "softmax")
    _expect("softmax: out", _shape(out, "softmax: out", 2), shape)
    run(library("softmax", _dtype_name(x, "softmax: x")), target=target, plan=plan, X=x, Y=out)
    return out


def layernorm(x, gamma, beta, eps=1e-5, out=None, target=None, plan=None):
    """(x - mean) / sqrt(var + eps) * gamma + beta over each row of x [M, N];
    gamma, beta: [N]."""
    m, n = _shape(x, "layernorm: x", 2)
    _expect("layernorm: gamma", _shape(gamma, "layernorm: gamma", 1), (n,))
    _expect("layernorm: beta", _shape(beta, "layernorm: beta", 1), (n,))
    if out is None:
        out = _empty(x, (m, n), "layernorm")
    _expect("layernorm: out", _shape(out, "layernorm: out", 2), (m, n))
    run(library("layernorm", _dtype_name(x, "layernorm: x")), target=target, plan=plan, X=x, gamma=gamma, beta=beta,
        Y=out, eps=float(eps))
    return out


def row_sum(x, out=None, target=None, plan=None):
    """The sum of each row of x [M, N]: [M]."""
    m, n = _shape(x, "row_sum: x", 2)
    if out is None:
        out = _empty(x, (m,), "row_sum")
    _expect("row_sum: out", _shape(out, "row_sum: out", 1), (m,))
    run(library("row_sum"), target=target, plan=plan, X=x, S=out)
    return out


def col_sum(x, out=None, target=None, plan=None):
    """The sum of each column of x [M, N]: [N]."""
    m, n = _shape(x, "col_sum: x", 2)
    if out is None:
        out = _empty(x, (n,), "col_sum")
    _expect("col_sum: out", _shape(out, "col_sum: out", 1), (n,))
    run(library("col_sum"), target=target, plan=plan, X=x, S=out)
    return out


def add_broadcast(a, b, out=None, target=None, plan=None):
    """a [M, N] + b [M] (b[r] added along row r)."""
    m, n = _shape(a, "add_broadcast: a", 2)
    _expect("add_broadcast: b", _shape(b, "add_broadcast: b", 1), (m,))
    if out is None:
        out = _empty(a, (m, n), "add_broadcast")
    _expect("add_broadcast: out", _shape(out, "add_broadcast: out", 2), (m, n))
    run(library("add_broadcast"), target=target, plan=plan, A=a, b=b, C=out)
    return out


def batched_gemm(a, b, out=None, target=None, plan=None):
    """out[i] = a[i] @ b[i]: a [batch, M, K], b [batch, K, N] (a batch stride of 0
    shares an operand)."""
    batch, m, k = _shape(a, "batched_gemm: a", 3)
    _expect("batched_gemm: b's batch and rows", _shape(b, "batched_gemm: b", 3)[:2], (batch, k))
    n = b.shape[2]
    if out is None:
        out = _empty(a, (batch, m, n), "batched_gemm")
    _expect("batched_gemm: out", _shape(out, "batched_gemm: out", 3), (batch, m, n))
    run(library("batched_gemm"), target=target, plan=plan, A=a, B=b, C=out)
    return out


def gemm_bias(a, b, bias, activation="none", bias_along="rows", out=None, target=None, plan=None):
    """act(a @ b + bias): bias [N] (one value per column, bias_along="rows") or [M]
    (one per row, "cols"); activation "none", "relu" or "gelu" (tanh form)."""
    m, k = _shape(a, "gemm_bias: a", 2)
    k2, n = _shape(b, "gemm_bias: b", 2)
    if k2 != k:
        raise ValueError("gemm_bias: a is %s and b is %s: a's columns (%d) must equal b's rows (%d)"
                         % ((m, k), (k2, n), k, k2))
    if bias_along not in ("rows", "cols"):
        raise ValueError("gemm_bias: bias_along is 'rows' or 'cols', not %r" % (bias_along,))
    _expect("gemm_bias: bias", _shape(bias, "gemm_bias: bias", 1), (n,) if bias_along == "rows" else (m,))
    if activation not in ("none", "relu", "gelu"):
        raise ValueError("gemm_bias: activation is 'none', 'relu' or 'gelu', not %r" % (activation,))
    if out is None:
        out = _empty(a, (m, n), "gemm_bias")
    _expect("gemm_bias: out", _shape(out, "gemm_bias: out", 2), (m, n))
    name = "gemm_bias_" + bias_along + ("" if activation == "none" else "_" + activation)
    run(library(name), target=target, plan=plan, A=a, B=b, bias=bias, C=out)
    return out


def attention(q, k, v, scale=None, causal=False, out=None, target=None, plan=None):
    """softmax(q k^T * scale [+ causal mask]) v per batch and head: q [B, Hq, Sq, D],
    k, v [B, Hkv, Skv, D] (Hq a multiple of Hkv); scale defaults to 1/sqrt(D)."""
    shape = _shape(q, "attention: q", 4)
    kshape = _shape(k, "attention: k", 4)
    if kshape[0] != shape[0] or kshape[3] != shape[3]:
        raise ValueError("attention: q is %s and k is %s: their batch (%d, %d) and head size (%d, %d) must "
                         "be equal" % (shape, kshape, shape[0], kshape[0], shape[3], kshape[3]))
    _expect("attention: v", _shape(v, "attention: v", 4), kshape)
    if kshape[1] == 0 or shape[1] % kshape[1]:
        raise ValueError("attention: q has %d heads and k %d: q's must be a multiple of k's" % (shape[1], kshape[1]))
    if out is None:
        out = _empty(q, shape, "attention")
    _expect("attention: out", _shape(out, "attention: out", 4), shape)
    if scale is None:
        scale = shape[3] ** -0.5
    run(library("attention_causal" if causal else "attention"), target=target, plan=plan,
        Q=q, K=k, V=v, O=out, scale=float(scale))
    return out


_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _dtype_name(x, what):
    """x's dtype by tessel's name for it (a TypeError if it has none); an array with no
    .dtype is taken as float32, which the launch checks against its DLPack dtype."""
    name = str(getattr(x, "dtype", "float32"))
    if name.startswith("torch."):
        name = name[6:]
    if name not in _DTYPES:
        fn = what.split(":")[0]
        raise TypeError("%s is %s; %s takes %s" % (what, name, fn, ", ".join(_DTYPES[:-1]) + " and " + _DTYPES[-1]))
    return name
