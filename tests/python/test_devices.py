# Device errors without a GPU: FakeArray exports through DLPack an array said to live
# on any device (CUDA device 0 or 1, ROCm) with no memory behind it, so every device
# mismatch, and a dtype tessel has no name for, is refused here as it would be on the
# GPU machine, before anything is read or launched.
import ctypes

import numpy as np
import pytest

import tessel
from oracle import nans, rand


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):  # DLManagedTensor (unversioned); no deleter: nothing to free
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

CUDA, ROCM = 2, 10  # DLPack device types


class FakeArray:
    """A row-major float32 array on DLPack device (type, id), with a null data pointer."""

    def __init__(self, *shape, device=(CUDA, 0), dtype=(2, 32)):
        self.shape, self.device = shape, device
        strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(shape))(*strides)
        self._managed = _Managed(_Tensor(None, _Device(*device), len(shape), _DType(dtype[0], dtype[1], 1),
                                         self._shape, self._strides, 0), None, None)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The importer holds this object while it holds the capsule's tensor.
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)


def test_cuda_and_host_arrays_mixed(rng):
    a, b = FakeArray(4, 5), rand(rng, 5, 6)
    with pytest.raises(ValueError, match=r"gemm: a is on cuda but gemm: b is on the host"):
        tessel.gemm(a, b, out=nans(4, 6))
    with pytest.raises(ValueError, match=r"gemm: a is on the host but gemm: out is on cuda"):
        tessel.gemm(rand(rng, 4, 5), b, out=FakeArray(4, 6))
    with pytest.raises(ValueError, match=r"tensor X is on the host but tensor Y is on cuda"):
        tessel.softmax(rand(rng, 3, 7), out=FakeArray(3, 7))


def test_cuda_arrays_with_a_host_target():
    a, b, c = FakeArray(4, 5), FakeArray(5, 6), FakeArray(4, 6)
    with pytest.raises(ValueError, match=r"target cpu runs on the host, but gemm: a is on cuda"):
        tessel.gemm(a, b, out=c, target="cpu")
    with pytest.raises(ValueError, match=r"target sim runs on the host, but tensor X is on cuda"):
        tessel.softmax(FakeArray(3, 7), out=FakeArray(3, 7), target="sim")
    k = tessel.compile(tessel.library("softmax"), target="cpu", sizes={"M": 3, "N": 7})
    with pytest.raises(ValueError, match=r"kernel softmax was compiled for cpu, but tensor X is on cuda"):
        k(X=FakeArray(3, 7), Y=FakeArray(3, 7))


@pytest.mark.parametrize("device,text", [((CUDA, 1), "2:1"), ((ROCM, 0), "10:0")])
def test_devices_tessel_does_not_launch_on(rng, device, text):
    with pytest.raises(ValueError, match=r"gemm: a is on DLPack device %s; tessel launches on the host \(1\) "
                                         r"and on CUDA device 0 \(2:0\)" % text):
        tessel.gemm(FakeArray(4, 5, device=device), rand(rng, 5, 6), out=nans(4, 6))
    with pytest.raises(ValueError, match=r"tensor X is on DLPack device %s" % text):
        tessel.softmax(FakeArray(3, 7, device=device), out=nans(3, 7))


def test_unknown_dtype_and_no_output_allocator(rng):
    with pytest.raises(TypeError, match=r"gemm: a has dtype uint8; tessel takes float32, float64"):
        tessel.gemm(FakeArray(4, 5, dtype=(1, 8)), rand(rng, 5, 6), out=nans(4, 6))
    with pytest.raises(TypeError, match=r"gemm: cannot allocate the output for a FakeArray; pass out="):
        tessel.gemm(FakeArray(4, 5), FakeArray(5, 6))
