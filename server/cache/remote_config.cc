#include "server/cache/remote_config.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "server/util/config_file.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

constexpr char kForms[] =
    "redis://[USER:PASSWORD@]HOST:PORT[/PREFIX][?OPTIONS] or "
    "redis-cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT[/PREFIX][?OPTIONS]";
constexpr char kOptions[] =
    "ttl, pool, write, read_only, timeout_ms, connect_timeout_ms, lease_ttl_ms, lease_wait_ms, "
    "password_file";

bool PrefixCharOk(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == ':';
}

}  // namespace

std::string RedisNode::Name() const {
  return host.find(':') != std::string::npos ? StrCat("[", host, "]:", port)
                                             : StrCat(host, ":", port);
}

std::string RemoteCacheConfig::Redacted() const {
  std::string out = cluster ? "redis-cluster://" : "redis://";
  if (!user.empty() || !password.empty())
    StrAppend(&out, user, password.empty() ? "" : ":***", "@");
  for (size_t i = 0; i < nodes.size(); ++i) StrAppend(&out, i ? "," : "", nodes[i].Name());
  StrAppend(&out, "/", prefix);
  return out;
}

absl::StatusOr<RemoteCacheConfig> ParseRemoteCacheUrl(const std::string& url,
                                                      const std::string& source,
                                                      const std::string& password_file_flag) {
  // Never echo the URL itself: it may hold a password. Nor a part of it that may be one: what
  // stands between "://" and the URL's last '@'. A password with an unescaped '?', '/' or '#'
  // ends the authority early, and the "host" or "option" the parser then complains about is
  // half a password; such a part is named, not quoted.
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(StrCat(source, ": ", what, "; the forms are ", kForms));
  };
  const size_t creds_begin = url.find("://") == std::string::npos ? 0 : url.find("://") + 3;
  const size_t creds_end = url.rfind('@') == std::string::npos || url.rfind('@') < creds_begin
                               ? creds_begin
                               : url.rfind('@');
  auto show = [&](const std::string& part) {
    // Text that also stands after the credentials (the host, the prefix, the options) is public
    // whatever else it matches.
    if (creds_end == creds_begin || url.find(part, creds_end) != std::string::npos) {
      return QuoteValue(part);
    }
    return std::string(
        "(not shown: it may be part of a password; percent-encode '?', '/', '#' and '@' in "
        "one)");
  };
  RemoteCacheConfig c;
  std::string rest;
  if (url.rfind("redis://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("redis-cluster://", 0) == 0) {
    c.cluster = true;
    rest = url.substr(16);
  } else {
    const size_t colon = url.find("://");
    return bad(colon == std::string::npos
                   ? std::string("not a URL (no scheme)")
                   : StrCat("scheme must be redis or redis-cluster, got ",
                            QuoteValue(url.substr(0, colon)),
                            " (rediss:// TLS is not supported by hiredis 0.14: put stunnel in "
                            "front of Redis, docs/farm.md)"));
  }
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  // Credentials end at the last '@' (a password may contain '@'; a host cannot).
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    const std::string userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = userinfo.find(':');
    c.user = userinfo.substr(0, colon);  // USER@ alone: the password comes from a file
    if (colon != std::string::npos) {
      c.password = userinfo.substr(colon + 1);
      if (c.password.empty()) return bad("the password after \"USER:\" is empty");
    }
  }
  std::string hosts = rest;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    hosts = rest.substr(0, slash);
    const std::string prefix = rest.substr(slash + 1);
    if (!prefix.empty()) {
      if (prefix.size() > 128) return bad("PREFIX must be at most 128 characters");
      for (char ch : prefix) {
        if (!PrefixCharOk(ch)) {
          return bad(StrCat("PREFIX ", show(prefix), " may hold only letters, digits and - _ . :"));
        }
      }
      c.prefix = prefix;
    }
  }
  if (hosts.empty()) return bad("HOST:PORT is missing");
  for (size_t start = 0; start <= hosts.size();) {
    size_t comma = hosts.find(',', start);
    if (comma == std::string::npos) comma = hosts.size();
    const std::string hp = hosts.substr(start, comma - start);
    start = comma + 1;
    RedisNode node;
    size_t colon = hp.rfind(':');
    std::string host = colon == std::string::npos ? hp : hp.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    int port = 0;
    if (host.empty() || colon == std::string::npos ||
        !absl::SimpleAtoi(hp.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return bad(StrCat(show(hp), " must be HOST:PORT with a port 1..65535"));
    }
    node.host = host;
    node.port = port;
    c.nodes.push_back(node);
    if (comma == hosts.size()) break;
  }
  if (!c.cluster && c.nodes.size() != 1) {
    return bad(StrCat("redis:// takes one HOST:PORT, got ", c.nodes.size(),
                      " (use redis-cluster:// for a Redis Cluster)"));
  }

  std::string password_file = password_file_flag;
  for (size_t start = 0; start < query.size();) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(start, amp - start);
    start = amp + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    auto number = [&](int64_t lo, int64_t hi, int64_t* out) -> absl::Status {
      if (!absl::SimpleAtoi(v, out) || *out < lo || *out > hi) {
        return bad(
            StrCat("option ", k, " must be a whole number ", lo, "..", hi, ", got ", show(v)));
      }
      return absl::OkStatus();
    };
    int64_t n = 0;
    absl::Status s;
    if (k == "ttl") {
      if ((s = number(0, int64_t{10} * 365 * 86400, &n)).ok()) c.ttl = std::chrono::seconds(n);
    } else if (k == "pool") {
      if ((s = number(1, 256, &n)).ok()) c.pool_size = static_cast<int>(n);
    } else if (k == "timeout_ms") {
      if ((s = number(1, 60000, &n)).ok()) c.command_timeout = std::chrono::milliseconds(n);
    } else if (k == "connect_timeout_ms") {
      if ((s = number(1, 60000, &n)).ok()) c.connect_timeout = std::chrono::milliseconds(n);
    } else if (k == "lease_ttl_ms") {
      if ((s = number(100, 600000, &n)).ok()) c.lease_ttl = std::chrono::milliseconds(n);
    } else if (k == "lease_wait_ms") {
      if ((s = number(0, 3600000, &n)).ok()) c.lease_wait = std::chrono::milliseconds(n);
    } else if (k == "write") {
      if (v == "sync") {
        c.write = RemoteWritePolicy::kSync;
      } else if (v == "async") {
        c.write = RemoteWritePolicy::kAsync;
      } else {
        s = bad(StrCat("option write must be sync or async, got ", show(v)));
      }
    } else if (k == "read_only") {
      if (v == "1" || v == "true") {
        c.read_only = true;
      } else if (v == "0" || v == "false") {
        c.read_only = false;
      } else {
        s = bad(StrCat("option read_only must be 0, 1, true or false, got ", show(v)));
      }
    } else if (k == "password_file") {
      if (!password_file.empty() && password_file != v) {
        s = bad("password_file is given twice (URL and --remote-cache-password-file)");
      }
      password_file = v;
    } else {
      s = bad(StrCat("unknown option ", show(k), " (options: ", kOptions, ")"));
    }
    if (!s.ok()) return s;
  }
  if (!password_file.empty()) {
    if (!c.password.empty()) {
      return bad("a password in the URL and a password file together; give one of them");
    }
    // A secret: refused when others may read it or anyone but coopd's user (or root) could
    // rewrite it (ReadConfigFile).
    auto text = ReadConfigFile(password_file, StrCat(source, ": cannot read password file"),
                               /*secret=*/true);
    // A file the URL names stands where a password may be (a '?' in it): named, not quoted.
    const std::string shown =
        password_file == password_file_flag ? QuoteValue(password_file, 256) : show(password_file);
    if (!text.ok() && shown != QuoteValue(password_file, 256)) {
      return absl::InvalidArgumentError(StrCat(source, ": cannot read the password file ", shown,
                                               ": check its path, owner and mode"));
    }
    if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
    c.password = text->substr(0, text->find('\n'));
    OPENSSL_cleanse(text->data(), text->size());
    if (!c.password.empty() && c.password.back() == '\r') c.password.pop_back();
    if (c.password.empty()) {
      return absl::InvalidArgumentError(
          StrCat(source, ": password file ", shown, " has an empty first line"));
    }
  }
  if (!c.user.empty() && c.password.empty()) {
    // The user is not echoed: it may be a password written without its ':'.
    return bad("credentials USER@ need a password: USER:PASSWORD@, or USER@ with a password file");
  }
  if (c.lease_wait.count() > 0 && c.lease_ttl < 3 * c.command_timeout) {
    return bad(StrCat("lease_ttl_ms (", c.lease_ttl.count(), ") must be at least 3 x timeout_ms (",
                      c.command_timeout.count(), "), so a heartbeat can renew it in time"));
  }
  return c;
}

}  // namespace coopd
