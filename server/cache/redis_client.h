// redis_client.h: the farm tier's connection to Redis, standalone or Cluster, on hiredis 0.14.
//
// Every command has a bounded time: connecting takes at most `connect_timeout`, each reply at
// most `command_timeout` (hiredis socket timeouts), and a caller waits for a free pooled
// connection at most `command_timeout`. A node whose connection fails is marked down for a
// backoff (100 ms, doubling to 5 s) during which its commands fail at once with UNAVAILABLE
// (no waiting); the first command after the backoff reconnects (counted in `reconnects`).
// Errors, timeouts and reconnects are counted. hiredis 0.14 has no Cluster support; this class
// adds it: CRC16 key slots with {hash tags}, the slot map from CLUSTER SLOTS, MOVED (update the
// map, refresh it, retry on the named node) and ASK (ASKING, then the command, on the named
// node, once), TRYAGAIN (retry after a pause).
//
// Thread-safe: commands may run from any thread; each takes a pooled connection (at most
// `pool_size` per node). A Reply owns its redisReply.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/cache/remote_config.h"

struct redisReply;
struct redisContext;

namespace coopd {

struct ReplyDeleter {
  void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// The Cluster hash slot of `key` (CRC16/XMODEM mod 16384 of the key, or of the first non-empty
// {tag} in it).
uint16_t RedisKeySlot(const std::string& key);

struct RedisClientStats {
  uint64_t errors = 0;      // failed commands (connection lost, refused, AUTH, error replies)
  uint64_t timeouts = 0;    // commands or connects past their timeout
  uint64_t reconnects = 0;  // connections made to a node that had been down
  uint64_t redirects = 0;   // MOVED and ASK replies followed
  uint64_t slot_refreshes = 0;
  bool healthy = true;  // no node is in backoff now
};

class RedisClient {
 public:
  explicit RedisClient(RemoteCacheConfig config);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs `argv` on the node holding `key` (standalone: the one node). The reply, which may be
  // an error reply other than a redirect (the caller's to read); UNAVAILABLE when the node is
  // down or the connection failed, DEADLINE_EXCEEDED past a timeout.
  absl::StatusOr<Reply> Command(const std::string& key, const std::vector<std::string>& argv);

  RedisClientStats Stats();
  void ZeroStats();
  const RemoteCacheConfig& config() const { return config_; }

 private:
  struct Node;
  Node* NodeFor(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Node* NodeForSlot(uint16_t slot);
  // One command on one node, optionally preceded by ASKING on the same connection.
  absl::StatusOr<Reply> OnNode(Node* node, const std::vector<std::string>& argv, bool asking);
  std::unique_ptr<redisContext, void (*)(redisContext*)> Connect(Node* node, absl::Status* error);
  absl::Status RefreshSlots();
  void MarkDown(Node* node, bool timeout);
  void MarkUp(Node* node);

  const RemoteCacheConfig config_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> slots_ ABSL_GUARDED_BY(mu_);  // 16384 node names (cluster)
  std::chrono::steady_clock::time_point last_refresh_ ABSL_GUARDED_BY(mu_);
  std::mutex refresh_mu_;  // one CLUSTER SLOTS at a time
  std::atomic<uint64_t> errors_{0}, timeouts_{0}, reconnects_{0}, redirects_{0}, slot_refreshes_{0};
};

}  // namespace coopd
