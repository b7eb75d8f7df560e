"""A DLPack producer made of ctypes alone, for tests without NumPy, PyTorch or a GPU:
it describes memory at any address as any dtype, shape, strides and device, so that
Kiln's checks can be seen to read the description (its memory is never touched)."""
import ctypes

CPU, CUDA = 1, 2
INT, UINT, FLOAT, BFLOAT, BOOL, FLOAT8_E4M3FN, FLOAT8_E5M2 = 0, 1, 2, 4, 6, 10, 12
DTYPES = {"f32": (FLOAT, 32), "f16": (FLOAT, 16), "bf16": (BFLOAT, 16), "i32": (INT, 32), "i1": (BOOL, 8),
          "f64": (FLOAT, 64), "u8": (UINT, 8), "f8e4m3": (FLOAT8_E4M3FN, 8), "f8e5m2": (FLOAT8_E5M2, 8)}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeTensor:
    """Has __dlpack__ and __dlpack_device__ like a framework's tensor; records the stream it was asked for."""

    def __init__(self, dtype, shape, strides=None, device=CUDA, address=0x7F0000000000):
        code, bits = DTYPES[dtype]
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self._managed = _ManagedTensor()
        t = self._managed.dl_tensor
        t.data, t.device, t.ndim = address, _Device(device, 0), len(shape)
        t.dtype = _DataType(code, bits, 1)
        t.shape = self._shape
        t.strides = self._strides if self._strides else None
        self.device = device
        self.streams = []

    def __dlpack_device__(self):
        return (self.device, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _new_capsule(ctypes.addressof(self._managed), b"dltensor", None)
