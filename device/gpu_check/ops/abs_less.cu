// Comparator: orders ints by absolute value (ties keep their order in a stable sort).
__device__ bool abs_less(int a, int b) {
  return abs(a) < abs(b);
}
