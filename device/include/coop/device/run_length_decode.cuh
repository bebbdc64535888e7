// run_length_decode.cuh: the device helpers rendered block_run_length_decode entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_run_length_decode ------------------------------------------------------------------
// R runs per thread in, D decoded items per thread out (one window); returns the total size.

template <class Prim, int R, int D, class T>
__device__ __forceinline__ unsigned int run_length_decode(void* t, const T* run_values,
                                                          const unsigned int* run_lengths,
                                                          T* decoded_items,
                                                          unsigned int from_decoded_offset) {
  T values[R], items[D];
  unsigned int lengths[R], total = 0;
  load_items(run_values, values);
  load_items(run_lengths, lengths);
  Prim(temp<Prim>(t), values, lengths, total).RunLengthDecode(items, from_decoded_offset);
  store_items(items, decoded_items);
  return total;
}

template <class Prim, int R, int D, class T>
__device__ __forceinline__ unsigned int run_length_decode_with_offsets(
    void* t, const T* run_values, const unsigned int* run_lengths, T* decoded_items,
    unsigned int* relative_offsets, unsigned int from_decoded_offset) {
  T values[R], items[D];
  unsigned int lengths[R], offsets[D], total = 0;
  load_items(run_values, values);
  load_items(run_lengths, lengths);
  Prim(temp<Prim>(t), values, lengths, total).RunLengthDecode(items, offsets, from_decoded_offset);
  store_items(items, decoded_items);
  store_items(offsets, relative_offsets);
  return total;
}

}  // namespace device
}  // namespace coop
