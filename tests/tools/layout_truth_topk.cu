// layout_truth_topk: like layout_truth, for block_topk, built by nvcc against a newer CCCL that
// deploy/install-deps.sh unpacks into .deps/ (3.3, and 3.5 as layout_truth_topk35). Same output
// format.
#include <cstdint>
#include <cstdio>
#include <cub/block/block_topk.cuh>

template <class Storage>
void Row(const char* method, const char* dtype, int bx, int items, const char* options) {
  std::printf("block_topk %s %s %d 1 1 %d - 0 %zu %zu %s\n", method, dtype, bx, items,
              sizeof(Storage), alignof(Storage), options);
}

int main() {
  Row<cub::detail::block_topk<uint32_t, 128, 4>::TempStorage>("max_keys", "uint32", 128, 4, "-");
  Row<cub::detail::block_topk<float, 256, 2>::TempStorage>("min_keys", "float32", 256, 2, "-");
  Row<cub::detail::block_topk<double, 64, 8, int>::TempStorage>("max_pairs", "float64", 64, 8,
                                                                "top_k.value_dtype=int32");
  Row<cub::detail::block_topk<int8_t, 96, 3, uint64_t>::TempStorage>("min_pairs", "int8", 96, 3,
                                                                     "top_k.value_dtype=uint64");
  return 0;
}
