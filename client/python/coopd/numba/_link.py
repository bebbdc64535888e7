"""Compiling a kernel that uses coopd.numba objects to a cubin, with no GPU."""

from __future__ import annotations

from typing import Any, Callable, Tuple

from numba import cuda

from coopd.numba._operators import cc_of


def link_to_cubin(pyfunc: Callable, signature: Any, arch: str = "sm_90",
                  options: Tuple[str, ...] = ("-optimize-unused-variables",)) -> bytes:
    """Compiles the kernel ``pyfunc`` (a plain Python function, or the ``py_func`` of a
    ``cuda.jit`` dispatcher) for ``signature`` to LTO-IR with numba-cuda and links it, with
    every LTO-IR its declared device functions bring (the coopd.numba objects' ``.files``),
    into a cubin for ``arch`` with nvJitLink (-lto). Needs no GPU: this is the path Numba takes
    at launch, stopped before loading. nvJitLink errors raise RuntimeError with its log."""
    from cuda.bindings import nvjitlink

    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    codes, _ = cuda.compile_all(pyfunc, signature, device=False, cc=cc_of(arch),
                                output="ltoir", abi="numba")
    handle = nvjitlink.create(2 + len(options), [f"-arch={arch}", "-lto", *options])
    try:
        for i, code in enumerate(codes):
            data = bytes(code.data) if hasattr(code, "data") else bytes(code)
            name = getattr(code, "name", None) or f"module{i}"
            nvjitlink.add_data(handle, nvjitlink.InputType.LTOIR, data, len(data), name)
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as e:
            log = bytearray(nvjitlink.get_error_log_size(handle))
            nvjitlink.get_error_log(handle, log)
            raise RuntimeError(f"nvJitLink: {e}: {log.decode(errors='replace').strip()}") from e
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
    finally:
        nvjitlink.destroy(handle)
    return bytes(cubin)
