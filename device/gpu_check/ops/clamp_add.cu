// Clamped add for non-negative ints: associative and commutative on them (min(a + b, 10000)).
__device__ int clamp_add(int a, int b) {
  const int s = a + b;
  return s < 10000 ? s : 10000;
}
