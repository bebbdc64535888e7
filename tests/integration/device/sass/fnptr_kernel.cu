// A CALL through a register (a function pointer): its target cannot be named, so it fails.
extern "C" __device__ __noinline__ float probe_double(float v) {
  return v * 2.0f;
}
extern "C" __device__ __noinline__ float probe_square(float v) {
  return v * v;
}
__device__ float (*probe_table[2])(float) = {probe_double, probe_square};

extern "C" __global__ void k_fnptr(float* data, int which) {
  __shared__ float stage[128];
  stage[threadIdx.x] = data[threadIdx.x];
  __syncthreads();
  data[threadIdx.x] = probe_table[which](stage[127 - threadIdx.x]);
}
