// A kernel shaped like a frontend's: items staged through shared memory (as a primitive's
// TempStorage would be), then passed to a coop_ entry point that another module defines
// (coop_noinline.cu or coop_inline.cu), so that only nvJitLink -lto can inline it.
extern "C" __device__ float coop_block_probe_f32_0123(float v);

extern "C" __global__ void k_probe(float* data) {
  __shared__ float stage[128];
  stage[threadIdx.x] = data[threadIdx.x];
  __syncthreads();
  data[threadIdx.x] = coop_block_probe_f32_0123(stage[127 - threadIdx.x]);
}
