// Not inlined, not coop_, not one of CUDA's helpers: a CALL to it must fail the check.
extern "C" __device__ __noinline__ float probe_helper(float v) {
  return v * 3.0f - 2.0f;
}
