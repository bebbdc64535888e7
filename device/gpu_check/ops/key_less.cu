// Comparator on a 12-byte user type: orders by key only (stable sorts keep ties in order).
struct Rec {
  int key;
  float value;
  int tag;
};
__device__ bool key_less(Rec a, Rec b) {
  return a.key < b.key;
}
