#include "server/cache/redis_client.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstring>
#include <thread>

#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

constexpr int kSlots = 16384;
constexpr int kMaxRedirects = 8;
constexpr auto kMinBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(5000);

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

void FreeContext(redisContext* c) {
  if (c != nullptr) redisFree(c);
}
using Ctx = std::unique_ptr<redisContext, void (*)(redisContext*)>;

// hiredis reports a socket timeout as an I/O error with errno's text.
bool IsTimeout(const redisContext* c) {
  return c->err == REDIS_ERR_IO && (std::strstr(c->errstr, "temporarily unavailable") != nullptr ||
                                    std::strstr(c->errstr, "timed out") != nullptr ||
                                    std::strstr(c->errstr, "in progress") != nullptr);
}

uint16_t Crc16(const char* p, size_t n) {
  uint16_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint16_t>(static_cast<uint8_t>(p[i])) << 8;
    for (int b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

// "MOVED 3999 127.0.0.1:6381" -> the node's name (RedisNode::Name(): an IPv6 host, which Redis
// writes unbracketed, in brackets); false for other errors and for an unreadable address.
bool ParseRedirect(const redisReply* r, const char* kind, std::string* node) {
  const size_t n = std::strlen(kind);
  if (r->type != REDIS_REPLY_ERROR || std::strncmp(r->str, kind, n) != 0 || r->str[n] != ' ') {
    return false;
  }
  const char* space = std::strchr(r->str + n + 1, ' ');
  if (space == nullptr) return false;
  const auto addr = ParseReportedHostPort(space + 1);
  if (!addr) return false;
  *node = RedisNode{addr->Bare(), addr->port}.Name();
  return true;
}

}  // namespace

void ReplyDeleter::operator()(redisReply* r) const {
  if (r != nullptr) freeReplyObject(r);
}

uint16_t RedisKeySlot(const std::string& key) {
  // A key's first {...} with something inside decides its slot (Redis Cluster's hash tags).
  const size_t open = key.find('{');
  if (open != std::string::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) {
      return Crc16(key.data() + open + 1, close - open - 1) % kSlots;
    }
  }
  return Crc16(key.data(), key.size()) % kSlots;
}

struct RedisClient::Node {
  RedisNode addr;
  std::string name;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Ctx> idle ABSL_GUARDED_BY(mu);
  int open ABSL_GUARDED_BY(mu) = 0;  // idle + in use
  bool down ABSL_GUARDED_BY(mu) = false;
  std::chrono::milliseconds backoff ABSL_GUARDED_BY(mu){0};
  std::chrono::steady_clock::time_point down_until ABSL_GUARDED_BY(mu);
};

RedisClient::RedisClient(RemoteCacheConfig config) : config_(std::move(config)) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : config_.nodes) NodeFor(n.Name());
}

RedisClient::~RedisClient() = default;

RedisClient::Node* RedisClient::NodeFor(const std::string& name) {
  auto it = nodes_.find(name);
  if (it != nodes_.end()) return it->second.get();
  auto node = std::make_unique<Node>();
  node->name = name;
  // Names come from RedisNode::Name(), so they parse; one that did not would connect to port 0
  // and fail there, naming it.
  const auto addr = ParseReportedHostPort(name);
  node->addr.host = addr ? addr->Bare() : name;
  node->addr.port = addr ? addr->port : 0;
  Node* raw = node.get();
  nodes_.emplace(name, std::move(node));
  return raw;
}

Ctx RedisClient::Connect(Node* node, absl::Status* error) {
  Ctx c(redisConnectWithTimeout(node->addr.host.c_str(), node->addr.port,
                                ToTimeval(config_.connect_timeout)),
        FreeContext);
  if (c == nullptr) {
    *error = absl::UnavailableError(StrCat("redis ", node->name, ": cannot allocate a context"));
    return Ctx(nullptr, FreeContext);
  }
  if (c->err != 0) {
    const bool timeout = IsTimeout(c.get());
    if (timeout) ++timeouts_;
    *error =
        timeout
            ? absl::DeadlineExceededError(StrCat("redis ", node->name, ": connect timed out after ",
                                                 config_.connect_timeout.count(), " ms"))
            : absl::UnavailableError(StrCat("redis ", node->name, ": connect: ", c->errstr));
    return Ctx(nullptr, FreeContext);
  }
  redisSetTimeout(c.get(), ToTimeval(config_.command_timeout));
  if (!config_.password.empty()) {
    std::vector<const char*> argv = {"AUTH"};
    std::vector<size_t> lens = {4};
    if (!config_.user.empty()) {
      argv.push_back(config_.user.c_str());
      lens.push_back(config_.user.size());
    }
    argv.push_back(config_.password.c_str());
    lens.push_back(config_.password.size());
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
      // Redis's own text ("WRONGPASS invalid username-password pair") names no secret.
      *error = absl::PermissionDeniedError(
          StrCat("redis ", node->name, ": AUTH", config_.user.empty() ? "" : " as user ",
                 config_.user, " failed: ", r != nullptr ? r->str : c->errstr));
      return Ctx(nullptr, FreeContext);
    }
  }
  if (config_.database != 0) {
    // The URL's /DB (redis-py's form); Redis's text ("ERR DB index is out of range") says why.
    const std::string db = StrCat(config_.database);
    Reply r(static_cast<redisReply*>(redisCommand(c.get(), "SELECT %s", db.c_str())));
    if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
      *error = absl::FailedPreconditionError(
          StrCat("redis ", node->name, ": SELECT ", db,
                 " (the URL's database) failed: ", r != nullptr ? r->str : c->errstr));
      return Ctx(nullptr, FreeContext);
    }
  }
  return c;
}

void RedisClient::MarkDown(Node* node, bool timeout) {
  std::vector<Ctx> dropped;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(node->mu);
    first = !node->down;
    node->down = true;
    node->backoff =
        node->backoff.count() == 0 ? kMinBackoff : std::min(node->backoff * 2, kMaxBackoff);
    node->down_until = std::chrono::steady_clock::now() + node->backoff;
    // Pooled connections to a node that failed are likely dead too (a restart closes them all).
    node->open -= static_cast<int>(node->idle.size());
    dropped.swap(node->idle);
  }
  node->cv.notify_all();
  if (first) {
    spdlog::warn(
        "remote cache: redis {} is {}; serving from the local tiers and compiling until it "
        "answers again",
        node->name, timeout ? "not answering in time" : "unreachable");
  }
}

void RedisClient::MarkUp(Node* node) {
  bool was_down = false;
  {
    std::lock_guard<std::mutex> lock(node->mu);
    was_down = node->down;
    node->down = false;
    node->backoff = std::chrono::milliseconds(0);
  }
  if (was_down) spdlog::info("remote cache: redis {} answers again; tier resumed", node->name);
}

absl::StatusOr<Reply> RedisClient::OnNode(Node* node, const std::vector<std::string>& argv,
                                          bool asking) {
  const auto deadline = std::chrono::steady_clock::now() + config_.command_timeout;
  Ctx ctx(nullptr, FreeContext);
  bool was_down = false;
  {
    std::unique_lock<std::mutex> lock(node->mu);
    if (node->down && std::chrono::steady_clock::now() < node->down_until) {
      return absl::UnavailableError(StrCat("redis ", node->name, " is down (next try in ",
                                           std::chrono::duration_cast<std::chrono::milliseconds>(
                                               node->down_until - std::chrono::steady_clock::now())
                                               .count(),
                                           " ms)"));
    }
    was_down = node->down;
    while (node->idle.empty() && node->open >= config_.pool_size) {
      if (node->cv.wait_until(lock, deadline) == std::cv_status::timeout) {
        ++timeouts_;
        return absl::DeadlineExceededError(
            StrCat("redis ", node->name, ": no free connection within ",
                   config_.command_timeout.count(), " ms (pool ", config_.pool_size, ")"));
      }
    }
    if (!node->idle.empty()) {
      ctx = std::move(node->idle.back());
      node->idle.pop_back();
    } else {
      ++node->open;
    }
  }
  auto give_back = [&](Ctx c) {
    {
      std::lock_guard<std::mutex> lock(node->mu);
      if (c != nullptr) {
        node->idle.push_back(std::move(c));
      } else {
        --node->open;
      }
    }
    node->cv.notify_one();
  };
  if (ctx == nullptr) {
    absl::Status error;
    ctx = Connect(node, &error);
    if (ctx == nullptr) {
      give_back(Ctx(nullptr, FreeContext));
      ++errors_;
      MarkDown(node, absl::IsDeadlineExceeded(error));
      return error;
    }
    if (was_down) ++reconnects_;
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = nullptr;
  bool sent = true;
  if (asking) sent = redisAppendCommand(ctx.get(), "ASKING") == REDIS_OK;
  sent = sent && redisAppendCommandArgv(ctx.get(), static_cast<int>(args.size()), args.data(),
                                        lens.data()) == REDIS_OK;
  if (sent && asking) {
    sent = redisGetReply(ctx.get(), &raw) == REDIS_OK;
    if (raw != nullptr) freeReplyObject(raw);
    raw = nullptr;
  }
  if (sent) sent = redisGetReply(ctx.get(), &raw) == REDIS_OK;
  if (!sent || raw == nullptr) {
    const bool timeout = IsTimeout(ctx.get());
    const std::string why = ctx->errstr;
    give_back(Ctx(nullptr, FreeContext));  // a context with an error is unusable
    if (timeout) {
      ++timeouts_;
    } else {
      ++errors_;
    }
    MarkDown(node, timeout);
    if (timeout) {
      return absl::DeadlineExceededError(StrCat("redis ", node->name, ": ", argv[0],
                                                " timed out after ",
                                                config_.command_timeout.count(), " ms"));
    }
    return absl::UnavailableError(StrCat("redis ", node->name, ": ", argv[0], ": ", why));
  }
  give_back(std::move(ctx));
  MarkUp(node);
  return Reply(static_cast<redisReply*>(raw));
}

absl::Status RedisClient::RefreshSlots() {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  std::vector<Node*> candidates;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!slots_.empty() &&
        std::chrono::steady_clock::now() - last_refresh_ < std::chrono::milliseconds(100)) {
      return absl::OkStatus();  // another thread just did it
    }
    for (auto& [name, node] : nodes_) candidates.push_back(node.get());
  }
  absl::Status last = absl::UnavailableError("redis cluster: no node to ask for CLUSTER SLOTS");
  for (Node* node : candidates) {
    auto r = OnNode(node, {"CLUSTER", "SLOTS"}, false);
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if ((*r)->type != REDIS_REPLY_ARRAY) {
      last = absl::UnavailableError(StrCat(
          "redis ", node->name,
          ": CLUSTER SLOTS: ", (*r)->type == REDIS_REPLY_ERROR ? (*r)->str : "not an array"));
      continue;
    }
    std::vector<std::string> slots(kSlots);
    for (size_t i = 0; i < (*r)->elements; ++i) {
      const redisReply* range = (*r)->element[i];
      if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) continue;
      const redisReply* master = range->element[2];
      if (master->type != REDIS_REPLY_ARRAY || master->elements < 2) continue;
      std::string host(master->element[0]->str != nullptr ? master->element[0]->str : "",
                       master->element[0]->len);
      if (host.empty()) host = node->addr.host;  // "" means the node we asked
      const std::string name =
          RedisNode{host, static_cast<int>(master->element[1]->integer)}.Name();
      for (long long s = range->element[0]->integer; s <= range->element[1]->integer && s < kSlots;
           ++s) {
        slots[static_cast<size_t>(s)] = name;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : slots) {
      if (!name.empty()) NodeFor(name);
    }
    slots_.swap(slots);
    last_refresh_ = std::chrono::steady_clock::now();
    ++slot_refreshes_;
    return absl::OkStatus();
  }
  return last;
}

RedisClient::Node* RedisClient::NodeForSlot(uint16_t slot) {
  bool empty = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    empty = slots_.empty();
  }
  if (empty) RefreshSlots().IgnoreError();  // failure: fall back to a seed; it redirects
  std::lock_guard<std::mutex> lock(mu_);
  if (!slots_.empty() && !slots_[slot].empty()) return NodeFor(slots_[slot]);
  return NodeFor(config_.nodes.front().Name());
}

absl::StatusOr<Reply> RedisClient::Command(const std::string& key,
                                           const std::vector<std::string>& argv) {
  if (!config_.cluster) {
    Node* node;
    {
      std::lock_guard<std::mutex> lock(mu_);
      node = NodeFor(config_.nodes.front().Name());
    }
    return OnNode(node, argv, false);
  }
  const uint16_t slot = RedisKeySlot(key);
  Node* node = NodeForSlot(slot);
  bool asking = false;
  bool refreshed_after_failure = false;
  for (int attempt = 0; attempt <= kMaxRedirects; ++attempt) {
    auto r = OnNode(node, argv, asking);
    if (!r.ok()) {
      // The node may have failed over or left: a fresh map may name another; try it once.
      if (refreshed_after_failure || !RefreshSlots().ok()) return r.status();
      refreshed_after_failure = true;
      Node* next = NodeForSlot(slot);
      if (next == node) return r.status();
      node = next;
      asking = false;
      continue;
    }
    std::string target;
    if (ParseRedirect(r->get(), "MOVED", &target)) {
      ++redirects_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!slots_.empty()) slots_[slot] = target;
        node = NodeFor(target);
      }
      RefreshSlots().IgnoreError();  // a slot moved: others probably did too (rate-limited)
      asking = false;
      continue;
    }
    if (ParseRedirect(r->get(), "ASK", &target)) {
      ++redirects_;
      std::lock_guard<std::mutex> lock(mu_);
      node = NodeFor(target);
      asking = true;
      continue;
    }
    if ((*r)->type == REDIS_REPLY_ERROR && std::strncmp((*r)->str, "TRYAGAIN", 8) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      asking = false;
      node = NodeForSlot(slot);
      continue;
    }
    return r;
  }
  ++errors_;
  return absl::UnavailableError(
      StrCat("redis cluster: more than ", kMaxRedirects, " redirects for slot ", slot));
}

RedisClientStats RedisClient::Stats() {
  RedisClientStats s;
  s.errors = errors_;
  s.timeouts = timeouts_;
  s.reconnects = reconnects_;
  s.redirects = redirects_;
  s.slot_refreshes = slot_refreshes_;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, node] : nodes_) {
    std::lock_guard<std::mutex> node_lock(node->mu);
    if (node->down) s.healthy = false;
  }
  return s;
}

void RedisClient::ZeroStats() {
  for (auto* c : {&errors_, &timeouts_, &reconnects_, &redirects_, &slot_refreshes_}) *c = 0;
}

}  // namespace coopd
