// Stateful: add, clamped at the int the state points to (non-negative inputs).
__device__ int limit_add(void* state, int a, int b) {
  const int limit = *static_cast<const int*>(state);
  const int s = a + b;
  return s < limit ? s : limit;
}
