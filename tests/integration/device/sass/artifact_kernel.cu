// A kernel calling a real coopd artifact, a block_reduce sum over 128 float32 items. The test
// driver prepends the artifact's header (coopctl --out) and defines COOP_ENTRY (the entry's
// symbol) and COOP_TEMP_BYTES; coopd's Link RPC links it with the artifact. With -lto the
// primitive is inlined (STS/LDS for its TempStorage, no CALL): the SASS check passes it.
extern "C" __global__ void k_artifact(const float* in, float* out) {
  __shared__ __align__(16) unsigned char temp_storage[COOP_TEMP_BYTES];
  const float sum = COOP_ENTRY(temp_storage, in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
