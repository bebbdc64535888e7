#include "server/cache/remote_cache.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "server/cache/record.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr size_t kMaxQueued = 256;

// The entry exists: 2. Else take the free lease: 1, or it is held: 0.
constexpr char kPollScript[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 2 end "
    "if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
    "return 0";
constexpr char kRenewScript[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
constexpr char kReleaseScript[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";
// Deletes a damaged value only if it is still the one that was read (by its SHA-1).
constexpr char kDeleteIfScript[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if v and redis.sha1hex(v) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

void PutField(std::string* out, const std::string& field) {
  const uint32_t n = static_cast<uint32_t>(field.size());
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out->append(field);
}

bool GetField(std::string_view* in, std::string* field) {
  if (in->size() < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>((*in)[i])) << (8 * i);
  in->remove_prefix(4);
  if (in->size() < n) return false;
  field->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

std::string Sha1Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 15]);
  }
  return out;
}

std::string InstanceId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::random_device rd;
  return StrCat(host, ":", getpid(), ":", rd(), rd(), ":");
}

}  // namespace

RemoteCache::RemoteCache(RemoteCacheConfig config)
    : client_(std::move(config)), instance_(InstanceId()) {
  lease_thread_ = std::thread([this] { LeaseLoop(); });
  if (client_.config().write == RemoteWritePolicy::kAsync) {
    writer_thread_ = std::thread([this] { WriterLoop(); });
  }
}

RemoteCache::~RemoteCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_thread_.joinable()) writer_thread_.join();  // drains the queued writes first
  if (lease_thread_.joinable()) lease_thread_.join();
  // Waiters left now belong to requests that shutdown already answered or cancelled; their
  // callbacks would reach a service being destroyed, so they are dropped.
}

std::string RemoteCache::EntryKey(const std::string& key) const {
  // The {key} hash tag puts an entry and its lease in one Cluster slot (the poll script reads
  // both), and spreads keys over the slots by their content hash.
  return StrCat(client_.config().prefix, ":{", key, "}:e");
}

std::string RemoteCache::LeaseKey(const std::string& key) const {
  return StrCat(client_.config().prefix, ":{", key, "}:l");
}

absl::Status RemoteCache::Ping() {
  auto r = client_.Command(client_.config().prefix, {"PING"});
  if (!r.ok()) return r.status();
  if ((*r)->type == REDIS_REPLY_ERROR) return absl::UnavailableError((*r)->str);
  return absl::OkStatus();
}

absl::StatusOr<CacheValue> RemoteCache::Get(const std::string& key, EntryMeta* attributes) {
  const std::string ek = EntryKey(key);
  auto r = client_.Command(ek, {"GET", ek});
  if (!r.ok() || (*r)->type == REDIS_REPLY_NIL || (*r)->type == REDIS_REPLY_ERROR) {
    // A failure is a miss (counted by the client, logged when the tier goes down and back).
    ++misses_;
    return absl::NotFoundError("remote: no entry");
  }
  const std::string_view stored((*r)->str, (*r)->len);
  auto payload = DecodeRecord(stored);
  CacheValue value;
  EntryMeta attrs;
  bool framed = false;
  if (payload.ok()) {
    std::string_view in(*payload);
    framed = GetField(&in, &value.meta) && GetField(&in, &value.blob) &&
             GetField(&in, &attrs.family) && GetField(&in, &attrs.dtype) &&
             GetField(&in, &attrs.arch) && GetField(&in, &attrs.request_digest) && in.empty();
  }
  if (!framed) {
    ++corruptions_;
    ++misses_;
    const std::string why = payload.ok() ? std::string("record: bad entry framing")
                                         : std::string(payload.status().message());
    if (client_.config().read_only) {
      spdlog::warn(
          "remote cache: entry {} failed verification ({}); not served (read-only: left "
          "in Redis)",
          key.substr(0, 16), why);
    } else {
      auto del = client_.Command(ek, {"EVAL", kDeleteIfScript, "1", ek, Sha1Hex(stored)});
      spdlog::warn("remote cache: entry {} failed verification ({}); {}", key.substr(0, 16), why,
                   del.ok() && (*del)->type == REDIS_REPLY_INTEGER && (*del)->integer == 1
                       ? "deleted from Redis"
                       : "not deleted (changed meanwhile or Redis unreachable)");
    }
    return absl::NotFoundError("remote: entry failed verification");
  }
  ++hits_;
  if (attributes != nullptr) *attributes = std::move(attrs);
  return value;
}

void RemoteCache::Write(const std::string& key, const std::string& record) {
  const std::string ek = EntryKey(key);
  std::vector<std::string> argv = {"SET", ek, record};
  if (client_.config().ttl.count() > 0) {
    argv.push_back("EX");
    argv.push_back(std::to_string(client_.config().ttl.count()));
  }
  auto r = client_.Command(ek, argv);
  if (r.ok() && (*r)->type != REDIS_REPLY_ERROR) {
    ++writes_;
  } else {
    ++write_failures_;
    if (r.ok()) spdlog::warn("remote cache: SET {} refused: {}", key.substr(0, 16), (*r)->str);
  }
}

void RemoteCache::Enqueue(std::function<void()> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_all();
}

absl::Status RemoteCache::Put(const std::string& key, const CacheValue& value,
                              const EntryMeta& meta) {
  if (client_.config().read_only) {
    ++writes_skipped_;
    return absl::OkStatus();
  }
  std::string payload;
  payload.reserve(value.meta.size() + value.blob.size() + 128);
  for (const std::string* f :
       {&value.meta, &value.blob, &meta.family, &meta.dtype, &meta.arch, &meta.request_digest}) {
    PutField(&payload, *f);
  }
  std::string record = EncodeRecord(payload, /*zstd_level=*/1);
  if (client_.config().write == RemoteWritePolicy::kSync) {
    Write(key, record);
    return absl::OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      ++writes_dropped_;
      return absl::OkStatus();
    }
  }
  Enqueue([this, key, record = std::move(record)] { Write(key, record); });
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RemoteCache::Purge(const CacheFilter&) {
  return uint64_t{0};
}

absl::StatusOr<int> RemoteCache::Poll(const std::string& key, const std::string& token) {
  const std::string ek = EntryKey(key), lk = LeaseKey(key);
  if (client_.config().read_only) {
    // Reads only: EXISTS on the entry, then on the lease.
    auto e = client_.Command(ek, {"EXISTS", ek});
    if (!e.ok()) return e.status();
    if ((*e)->type == REDIS_REPLY_INTEGER && (*e)->integer == 1) return 2;
    auto l = client_.Command(lk, {"EXISTS", lk});
    if (!l.ok()) return l.status();
    return (*l)->type == REDIS_REPLY_INTEGER && (*l)->integer == 1 ? 0 : 3;
  }
  auto r = client_.Command(ek, {"EVAL", kPollScript, "2", ek, lk, token,
                                std::to_string(client_.config().lease_ttl.count())});
  if (!r.ok()) return r.status();
  if ((*r)->type != REDIS_REPLY_INTEGER) {
    return absl::UnavailableError(
        StrCat("remote cache: lease script: ", (*r)->type == REDIS_REPLY_ERROR ? (*r)->str : "?"));
  }
  return static_cast<int>((*r)->integer);
}

void RemoteCache::Coordinate(const std::string& key, TurnDone done) {
  if (client_.config().lease_wait.count() == 0) return done(Turn::kCompile, "");
  std::string token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_) return done(Turn::kCompile, "");
    token = StrCat(instance_, ++next_token_);
  }
  auto polled = Poll(key, token);
  if (!polled.ok()) return done(Turn::kCompile, "");  // fail open: compile without a lease
  switch (*polled) {
    case 2:
      return done(Turn::kReady, "");
    case 1: {
      ++leases_acquired_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        held_[key] = token;
      }
      return done(Turn::kCompile, token);
    }
    case 3:
      return done(Turn::kCompile, "");
    default:
      break;
  }
  ++lease_waits_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_) return done(Turn::kCompile, "");
    waiters_.push_back(
        {key, std::chrono::steady_clock::now() + client_.config().lease_wait, std::move(done)});
  }
  cv_.notify_all();
}

void RemoteCache::Release(const std::string& key, const std::string& lease) {
  if (lease.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(key);
    if (it != held_.end() && it->second == lease) held_.erase(it);
  }
  auto release = [this, key, lease] {
    const std::string lk = LeaseKey(key);
    // A failure leaves the lease to expire by its TTL; waiters then take it over.
    client_.Command(lk, {"EVAL", kReleaseScript, "1", lk, lease}).IgnoreError();
  };
  if (client_.config().write == RemoteWritePolicy::kAsync) return Enqueue(release);
  release();
}

void RemoteCache::AbandonWaits() {
  std::vector<Waiter> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
    left.swap(waiters_);
  }
  for (auto& w : left) w.done(Turn::kCompile, "");
}

void RemoteCache::LeaseLoop() {
  const auto heartbeat_every = client_.config().lease_ttl / 3;
  auto next_heartbeat = std::chrono::steady_clock::now() + heartbeat_every;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kPollInterval);
    if (stop_) break;
    std::vector<Waiter> waiting;
    waiting.swap(waiters_);
    std::map<std::string, std::string> held;
    const auto now = std::chrono::steady_clock::now();
    const bool beat = now >= next_heartbeat;
    if (beat) {
      held = held_;
      next_heartbeat = now + heartbeat_every;
    }
    lock.unlock();
    // A tier that is down comes back without waiting for a request (a ping after each backoff).
    if (!client_.Stats().healthy) Ping().IgnoreError();
    for (const auto& [key, token] : held) {
      const std::string lk = LeaseKey(key);
      auto r = client_.Command(lk, {"EVAL", kRenewScript, "1", lk, token,
                                    std::to_string(client_.config().lease_ttl.count())});
      if (r.ok() && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == 0) {
        // Expired (a stall past its TTL) or taken over: the compile goes on, and its write
        // is still good (entries are content-addressed), but others may compile it too.
        ++leases_lost_;
        std::lock_guard<std::mutex> relock(mu_);
        auto it = held_.find(key);
        if (it != held_.end() && it->second == token) held_.erase(it);
      }
    }
    std::vector<Waiter> still;
    for (auto& w : waiting) {
      std::string token;
      {
        std::lock_guard<std::mutex> relock(mu_);
        token = StrCat(instance_, ++next_token_);
      }
      auto polled = Poll(w.key, token);
      if (!polled.ok()) {
        w.done(Turn::kCompile, "");  // fail open
      } else if (*polled == 2) {
        ++lease_wait_hits_;
        w.done(Turn::kReady, "");
      } else if (*polled == 1) {
        ++leases_acquired_;
        ++lease_takeovers_;
        {
          std::lock_guard<std::mutex> relock(mu_);
          held_[w.key] = token;
        }
        w.done(Turn::kCompile, token);
      } else if (*polled == 3 || std::chrono::steady_clock::now() >= w.deadline) {
        if (*polled != 3) {
          ++lease_wait_timeouts_;
          spdlog::warn(
              "remote cache: waited {} ms for another replica's compile of {}; "
              "compiling here",
              client_.config().lease_wait.count(), w.key.substr(0, 16));
        }
        w.done(Turn::kCompile, "");
      } else {
        still.push_back(std::move(w));
      }
    }
    lock.lock();
    for (auto& w : still) waiters_.push_back(std::move(w));
  }
}

void RemoteCache::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and drained
    auto op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    op();
    lock.lock();
  }
}

TierStats RemoteCache::Stats() {
  TierStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.corruptions = corruptions_;
  s.write_failures = write_failures_;
  s.degraded = !client_.Stats().healthy;
  return s;
}

void RemoteCache::ZeroStats() {
  for (auto* c : {&hits_, &misses_, &corruptions_, &writes_, &write_failures_, &writes_skipped_,
                  &writes_dropped_, &leases_acquired_, &lease_waits_, &lease_wait_hits_,
                  &lease_wait_timeouts_, &lease_takeovers_, &leases_lost_}) {
    *c = 0;
  }
  client_.ZeroStats();
}

RemoteStats RemoteCache::remote_stats() {
  RemoteStats s;
  s.url = client_.config().Redacted();
  s.cluster = client_.config().cluster;
  s.read_only = client_.config().read_only;
  s.client = client_.Stats();
  s.hits = hits_;
  s.misses = misses_;
  s.corruptions = corruptions_;
  s.writes = writes_;
  s.write_failures = write_failures_;
  s.writes_skipped = writes_skipped_;
  s.writes_dropped = writes_dropped_;
  s.leases_acquired = leases_acquired_;
  s.lease_waits = lease_waits_;
  s.lease_wait_hits = lease_wait_hits_;
  s.lease_wait_timeouts = lease_wait_timeouts_;
  s.lease_takeovers = lease_takeovers_;
  s.leases_lost = leases_lost_;
  return s;
}

}  // namespace coopd
