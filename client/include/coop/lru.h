// lru.h: the one least-recently-used map of coopd and its client (coopd's memory tier and request
// memo, the client's artifact cache), bounded by a count of entries and a sum of sizes, either
// or both. Not thread-safe: each user holds its own mutex around it. Internal to coopd's
// projects; not part of the client API's compatibility promise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace coop {

template <class Value>
class Lru {
 public:
  // 0 for either limit: no limit of that kind.
  Lru(size_t max_entries, uint64_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The value under `key`, now the most recent; null when there is none.
  Value* Find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    list_.splice(list_.begin(), list_, it->second);
    return &it->second->value;
  }

  // Stores `value` (of `bytes`) under `key` as the most recent, replacing the value there, then
  // drops the least recent entries until both limits hold. A value larger than max_bytes is not
  // stored (the one it replaces is still dropped). Every value taken out, replaced or evicted,
  // is moved into `removed` (when not null) so that the caller can free it outside its lock.
  // Returns how many were evicted (not counting the one replaced).
  size_t Put(const std::string& key, Value value, uint64_t bytes,
             std::vector<Value>* removed = nullptr) {
    if (auto it = index_.find(key); it != index_.end()) Erase(it->second, removed);
    if (max_bytes_ != 0 && bytes > max_bytes_) return 0;
    size_t evicted = 0;
    while (!list_.empty() && ((max_entries_ != 0 && list_.size() >= max_entries_) ||
                              (max_bytes_ != 0 && bytes_ + bytes > max_bytes_))) {
      Erase(std::prev(list_.end()), removed);
      ++evicted;
    }
    list_.push_front(Node{key, std::move(value), bytes});
    index_[key] = list_.begin();
    bytes_ += bytes;
    return evicted;
  }

  // Drops the entry under `key`, if any; true when there was one.
  bool Erase(const std::string& key, std::vector<Value>* removed = nullptr) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    Erase(it->second, removed);
    return true;
  }

  // Drops every entry for which pred(key, value) holds; returns how many.
  template <class Pred>
  size_t EraseIf(Pred pred, std::vector<Value>* removed = nullptr) {
    size_t n = 0;
    for (auto it = list_.begin(); it != list_.end();) {
      auto next = std::next(it);
      if (pred(it->key, static_cast<const Value&>(it->value))) {
        Erase(it, removed);
        ++n;
      }
      it = next;
    }
    return n;
  }

  size_t size() const { return list_.size(); }
  uint64_t bytes() const { return bytes_; }
  size_t max_entries() const { return max_entries_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  struct Node {
    std::string key;
    Value value;
    uint64_t bytes;
  };
  using List = std::list<Node>;  // front: the most recent

  void Erase(typename List::iterator it, std::vector<Value>* removed) {
    bytes_ -= it->bytes;
    index_.erase(it->key);
    if (removed != nullptr) removed->push_back(std::move(it->value));
    list_.erase(it);
  }

  const size_t max_entries_;
  const uint64_t max_bytes_;
  List list_;
  std::unordered_map<std::string, typename List::iterator> index_;
  uint64_t bytes_ = 0;
};

}  // namespace coop
