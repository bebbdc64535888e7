// A kernel calling a function from another module (helper_noinline.cu) whose name has no coop_
// in it: a frontend's own helper, or a user operator when the SYMBOLS_FILE lists it. It calls
// before the barrier, so the result is staged through shared memory on the way out.
extern "C" __device__ float probe_helper(float v);

extern "C" __global__ void k_helper(float* data) {
  __shared__ float stage[128];
  stage[127 - threadIdx.x] = probe_helper(data[threadIdx.x]);
  __syncthreads();
  data[threadIdx.x] = stage[threadIdx.x];
}
