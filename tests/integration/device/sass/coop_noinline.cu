// A wrapper that LTO cannot inline: it stays in the cubin as $k_probe$coop_block_probe_f32_0123
// and the kernel CALLs it. The SASS check must fail this.
extern "C" __device__ __noinline__ float coop_block_probe_f32_0123(float v) {
  return v * v + 1.0f;
}
