// CALLs that CUDA itself makes: IEEE-rounded float division and sqrtf on values unknown at
// compile time call ptxas's slow paths ($__internal_<n>_$__cuda_sm3x_div_rn_noftz_f32_slowpath,
// ..._sqrt_rn_f32_slowpath), 64-bit division calls __cuda_sm20_div_u64, and printf calls the
// driver's vprintf through a register. All are on the SASS check's allowlist: this passes.
extern "C" __global__ void k_cuda_helpers(float* data, unsigned long long* wide, float d,
                                          unsigned long long q) {
  __shared__ float stage[128];
  stage[threadIdx.x] = data[threadIdx.x];
  __syncthreads();
  const float v = stage[127 - threadIdx.x];
  data[threadIdx.x] = sqrtf(v) + v / d;
  wide[threadIdx.x] /= q;
  if (v < 0.0f) printf("negative item %f\n", v);
}
