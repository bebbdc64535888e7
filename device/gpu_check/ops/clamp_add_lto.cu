// The same clamped add, compiled to LTO-IR by nvrtc_ltoir (not by coopd) for --op-ltoir.
extern "C" __device__ int clamp_add_lto(int a, int b) {
  const int s = a + b;
  return s < 10000 ? s : 10000;
}
