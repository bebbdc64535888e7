// Block-prefix callback over a per-thread running total (as CUB's own examples keep it): CUB
// calls it in every lane of the first warp with the tile's aggregate; it returns the total before
// the tile (lane 0's return is the tile's prefix) and advances the total.
__device__ int tile_prefix(void* state, int aggregate) {
  int* total = static_cast<int*>(state);
  const int prefix = *total;
  *total = prefix + aggregate;
  return prefix;
}
