# PyTorch tensors, CPU and CUDA, through DLPack (no copies). Without PyTorch the whole
# file skips, and without a GPU the CUDA cases (pytest -rs shows why).
import numpy as np
import pytest

import tessel
from oracle import assert_close

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the torch tests skip")
has_gpu = torch.cuda.is_available()
cuda = pytest.mark.skipif(not has_gpu, reason="no CUDA GPU: the CUDA tensor tests skip")


def rand(*shape, device="cpu", seed=[0]):
    seed[0] += 1
    g = torch.Generator().manual_seed(seed[0])
    return (torch.rand(shape, generator=g, dtype=torch.float32) * 2 - 1).to(device)


def nans(*shape, device="cpu", dtype=torch.float32):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def f64(t):
    return t.detach().cpu().double().numpy()


def softmax64(x):
    x = f64(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
@pytest.mark.parametrize("m,n,k", [(7, 13, 5), (65, 33, 129)])
def test_gemm(device, m, n, k):
    a, b = rand(m, k, device=device), rand(k, n, device=device)
    out = nans(m, n, device=device)
    assert tessel.gemm(a, b, out=out) is out
    if device == "cuda":
        torch.cuda.synchronize()
    assert_close(f64(out), f64(a) @ f64(b))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_gemm_allocates_and_takes_views(device):
    big = rand(50, 40, device=device)
    a = big[3:33, 4:24]  # leading dimension 40
    b = rand(31, 20, device=device).t()  # transposed: column stride 20
    c = tessel.gemm(a, b)
    assert isinstance(c, torch.Tensor) and c.device.type == device and c.shape == (30, 31)
    if device == "cuda":
        torch.cuda.synchronize()
    assert_close(f64(c), f64(a) @ f64(b))
    c2 = nans(30, 31, device=device)
    tessel.gemm(a, b.contiguous(), out=c2, alpha=0.5, beta=0.0)
    if device == "cuda":
        torch.cuda.synchronize()
    assert_close(f64(c2), 0.5 * (f64(a) @ f64(b)))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_library_on_tensors(device):
    x = rand(37, 75, device=device) * 4
    y = nans(37, 75, device=device)
    tessel.softmax(x, out=y)
    g, b = rand(75, device=device), rand(75, device=device)
    z = tessel.layernorm(x, g, b, eps=1e-5)
    if device == "cuda":
        torch.cuda.synchronize()
    assert_close(f64(y), softmax64(x))
    x64 = f64(x)
    mu, var = x64.mean(axis=1, keepdims=True), x64.var(axis=1, keepdims=True)
    assert_close(f64(z), (x64 - mu) / np.sqrt(var + 1e-5) * f64(g) + f64(b), rtol=1e-5)


def test_errors_on_tensors():
    with pytest.raises(TypeError, match=r"gemm: a is float64"):
        tessel.gemm(rand(4, 5).double(), rand(5, 6))
    with pytest.raises(TypeError, match=r"int64"):
        tessel.gemm(torch.ones(4, 5, dtype=torch.int64), rand(5, 6))
    with pytest.raises(ValueError, match=r"a's columns \(5\) must equal b's rows \(6\)"):
        tessel.gemm(rand(4, 5), rand(6, 6))


@cuda
def test_cuda_errors():
    a = rand(4, 5, device="cuda")
    with pytest.raises(ValueError, match=r"gemm: a is on cuda but gemm: b is on the host"):
        tessel.gemm(a, rand(5, 6))
    with pytest.raises(ValueError, match=r"target cpu runs on the host, but gemm: a is on cuda"):
        tessel.gemm(a, rand(5, 6, device="cuda"), target="cpu")


@cuda
def test_cuda_on_a_side_stream():
    # tessel launches on the default stream; the wrapper orders it with the current one.
    s = torch.cuda.Stream()
    a0, b0 = rand(300, 200, device="cuda"), rand(200, 100, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        # Milliseconds of work on s before the inputs are written on s: a launch
        # that did not wait for s would read zeros.
        busy = torch.rand(4096, 4096, device="cuda")
        for _ in range(8):
            busy = busy @ busy / 4096
        a, b = torch.zeros_like(a0), torch.zeros_like(b0)
        a.copy_(a0 + busy[0, 0] * 0)
        b.copy_(b0)
        out = nans(300, 100, device="cuda")
        tessel.gemm(a, b, out=out)
        x = rand(64, 500, device="cuda")
        y = tessel.softmax(x)
        total = out.sum() + y.sum()  # on s: must see tessel's results
    s.synchronize()
    assert_close(f64(out), f64(a0) @ f64(b0))
    assert_close(f64(y), softmax64(x))
    assert np.isfinite(total.item())


@cuda
def test_python_kernel_on_cuda():
    from test_dsl import row_softmax
    x = rand(37, 300, device="cuda") * 4
    y = nans(37, 300, device="cuda")
    tessel.run(row_softmax(), X=x, Y=y)
    torch.cuda.synchronize()
    assert_close(f64(y), softmax64(x))


def test_cuda_stream_check_without_a_gpu(monkeypatch):
    # tessel.gemm's CUDA-tensor path, on host tensors that say they are on CUDA and a
    # stubbed query of PyTorch's current stream: on the default stream (raw handle 0)
    # the binding runs the GEMM (here on the host, as the capsules say); on another
    # stream gemm goes the ordered way (_gemm_strided, then run() and _on_stream).
    class MockCuda(torch.Tensor):
        is_cuda = True
        __torch_function__ = torch._C._disabled_torch_function_impl

    a, b, out = (torch.Tensor._make_subclass(MockCuda, t) for t in (rand(8, 5), rand(5, 6), nans(8, 6)))
    tessel._exported(a, "a")  # files MockCuda as a PyTorch tensor type
    asked, ordered = [], []
    monkeypatch.setattr(tessel, "_raw_stream", lambda device: asked.append(device) or stream)
    monkeypatch.setattr(tessel, "_gemm_strided", lambda *args: ordered.append(args[-1]) or args[2])
    stream = 0
    assert tessel.gemm(a, b, out=out) is out
    assert asked == [0] and ordered == []
    assert_close(f64(out), f64(a) @ f64(b))
    stream = 0x5eed
    assert tessel.gemm(a, b, out=out) is out
    assert asked == [0, 0] and ordered == ["a non-default CUDA stream"]


def test_tensor_on_a_device_without_dlpack():
    # PyTorch refuses to export a meta tensor (BufferError): a device tessel does not
    # launch on, so a ValueError that names it.
    x = torch.empty(3, 5, device="meta")
    with pytest.raises(ValueError, match=r"gemm: a is a PyTorch tensor on meta, which PyTorch does not export "
                                         r"through DLPack; tessel launches on the host and on CUDA device 0"):
        tessel.gemm(x, torch.empty(5, 6, device="meta"), out=torch.empty(3, 6, device="meta"))
    with pytest.raises(ValueError, match=r"tensor X is a PyTorch tensor on meta"):
        tessel.softmax(x, out=torch.empty(3, 5, device="meta"))
