#include "server/cache/remote_config.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "server/util/config_file.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

constexpr char kForms[] =
    "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?OPTIONS] or "
    "redis-cluster://[[USER]:PASSWORD@]HOST[:PORT],HOST[:PORT][?OPTIONS]";
constexpr char kOptions[] =
    "prefix, db, ttl, pool, write, read_only, timeout_ms, connect_timeout_ms, lease_ttl_ms, "
    "lease_wait_ms, password_file";
constexpr int kDefaultPort = 6379;

bool PrefixCharOk(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == ':';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; false for a '%' not followed by two hex digits.
bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size() || HexValue(in[i + 1]) < 0 || HexValue(in[i + 2]) < 0) return false;
    out->push_back(static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
    i += 2;
  }
  return true;
}

// What Redacted() writes for a user or prefix: URL delimiters percent-encoded.
std::string PercentEncode(const std::string& in) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// The authority of a URL's text after "://": up to the first '/', '?' or '#'.
size_t AuthorityEnd(const std::string& rest) {
  const size_t end = rest.find_first_of("/?#");
  return end == std::string::npos ? rest.size() : end;
}

}  // namespace

std::string RedisNode::Name() const {
  return host.find(':') != std::string::npos ? StrCat("[", host, "]:", port)
                                             : StrCat(host, ":", port);
}

std::string RemoteCacheConfig::Redacted() const {
  std::string out = cluster ? "redis-cluster://" : "redis://";
  if (!user.empty() || !password.empty()) {
    StrAppend(&out, PercentEncode(user), password.empty() ? "" : ":***", "@");
  }
  for (size_t i = 0; i < nodes.size(); ++i) StrAppend(&out, i ? "," : "", nodes[i].Name());
  StrAppend(&out, "/", database, "?prefix=", PercentEncode(prefix));
  return out;
}

absl::StatusOr<RemoteCacheConfig> ParseRemoteCacheUrl(const std::string& url,
                                                      const std::string& source,
                                                      const std::string& password_file_flag) {
  // Never echo the URL itself: it may hold a password. Nor a part of it that may be one: what
  // stands between "://" and the URL's last '@'. A password with an unescaped '?', '/' or '#'
  // ends the authority early, and the "host" or "option" the parser then complains about is
  // half a password; such a part is named, not quoted. Quoted parts are always the URL's own
  // text (before percent-decoding), so that rule can be checked on it.
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(StrCat(source, ": ", what, "; the forms are ", kForms));
  };
  const auto [creds_begin, creds_end] = FindCredentials(url);
  auto show = [&](const std::string& part) {
    // Text that also stands after the credentials (the host, the database, the options) is
    // public whatever else it matches.
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
  } else if (url.rfind("rediss://", 0) == 0) {
    return bad(
        "rediss:// (Redis over TLS) is not supported: coopd's hiredis 0.14 has no TLS. "
        "Terminate TLS in front of Redis on coopd's side instead: a local TLS client tunnel "
        "(stunnel with client = yes, or ghostunnel client) listening on 127.0.0.1 and "
        "connecting to Redis's TLS port, and redis://127.0.0.1:TUNNEL_PORT as the URL "
        "(docs/farm.md)");
  } else {
    const size_t colon = url.find("://");
    return bad(colon == std::string::npos ? std::string("not a URL (no scheme)")
                                          : StrCat("scheme must be redis or redis-cluster, got ",
                                                   QuoteValue(url.substr(0, colon))));
  }
  // The authority ends at the first '/', '?' or '#'; what follows is the path (the database),
  // then the query (the options).
  const size_t authority_end = AuthorityEnd(rest);
  std::string authority = rest.substr(0, authority_end);
  std::string path, query;
  if (authority_end < rest.size()) {
    std::string tail = rest.substr(authority_end);
    if (const size_t hash = tail.find('#'); hash != std::string::npos) {
      return bad("a URL fragment ('#') is not allowed; percent-encode '#' as %23 in a password");
    }
    const size_t q = tail.find('?');
    if (q != std::string::npos) query = tail.substr(q + 1);
    path = tail.substr(0, q);
  }
  // Credentials end at the authority's last '@' (a password may contain '@'; a host cannot).
  if (size_t at = authority.rfind('@'); at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    // USER@ alone: the password comes from a file.
    if (!PercentDecode(userinfo.substr(0, colon), &c.user)) {
      return bad("the user has a '%' that is not followed by two hex digits");
    }
    if (colon != std::string::npos) {
      if (!PercentDecode(userinfo.substr(colon + 1), &c.password)) {
        return bad(
            "the password has a '%' that is not followed by two hex digits (write '%' as %25)");
      }
      if (c.password.empty()) return bad("the password after \"USER:\" is empty");
    }
  }
  const std::string& hosts = authority;
  if (hosts.empty()) return bad("HOST is missing");
  for (size_t start = 0; start <= hosts.size();) {
    size_t comma = hosts.find(',', start);
    if (comma == std::string::npos) comma = hosts.size();
    const std::string hp = hosts.substr(start, comma - start);
    start = comma + 1;
    // HOST, HOST:PORT, [V6], [V6]:PORT.
    const std::optional<HostPort> parsed = ParseHostPort(hp, /*port_optional=*/true);
    if (!parsed || parsed->port == 0) {
      return bad(StrCat(show(hp), " must be HOST or HOST:PORT with a port 1..65535"));
    }
    RedisNode node;
    node.host = parsed->Bare();
    node.port = parsed->port < 0 ? kDefaultPort : parsed->port;
    c.nodes.push_back(node);
    if (comma == hosts.size()) break;
  }
  if (!c.cluster && c.nodes.size() != 1) {
    return bad(StrCat("redis:// takes one HOST[:PORT], got ", c.nodes.size(),
                      " (use redis-cluster:// for a Redis Cluster)"));
  }
  // The path: the database number, as redis-py reads it.
  std::string db_text;  // as written
  if (path.size() > 1) {
    db_text = path.substr(1);
    std::string decoded;
    int64_t db = -1;
    if (!PercentDecode(db_text, &decoded) || decoded.empty() ||
        decoded.find_first_not_of("0123456789") != std::string::npos ||
        !absl::SimpleAtoi(decoded, &db) || db > 2147483647) {
      return bad(
          StrCat("the path must be a database number (0 or more; Redis has 0..15 unless its "
                 "`databases` setting says more), got ",
                 show(db_text),
                 ". The path was the key prefix before: give a prefix as the option ?prefix=NAME"));
    }
    c.database = static_cast<int>(db);
  }

  std::string password_file = password_file_flag;
  std::string password_file_raw;  // as the URL writes it, for show()
  for (size_t start = 0; start < query.size();) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(start, amp - start);
    start = amp + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    const std::string raw_k = kv.substr(0, eq);
    const std::string raw_v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    std::string k, v;
    if (!PercentDecode(raw_k, &k) || !PercentDecode(raw_v, &v)) {
      return bad(StrCat("the option ", show(kv),
                        " has a '%' that is not followed by two hex digits (write '%' as %25)"));
    }
    auto number = [&](int64_t lo, int64_t hi, int64_t* out) -> absl::Status {
      if (!absl::SimpleAtoi(v, out) || *out < lo || *out > hi) {
        return bad(
            StrCat("option ", k, " must be a whole number ", lo, "..", hi, ", got ", show(raw_v)));
      }
      return absl::OkStatus();
    };
    int64_t n = 0;
    absl::Status s;
    if (k == "prefix") {
      if (v.empty() || v.size() > 128) {
        s = bad("option prefix must be 1..128 characters");
      } else if (!std::all_of(v.begin(), v.end(), PrefixCharOk)) {
        s = bad(
            StrCat("option prefix ", show(raw_v), " may hold only letters, digits and - _ . :"));
      } else {
        c.prefix = v;
      }
    } else if (k == "db") {
      if ((s = number(0, 2147483647, &n)).ok()) {
        if (!db_text.empty() && n != c.database) {
          s = bad(
              StrCat("the database is given twice and differently: /", c.database, " and db=", n));
        }
        c.database = static_cast<int>(n);
      }
    } else if (k == "ttl") {
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
        s = bad(StrCat("option write must be sync or async, got ", show(raw_v)));
      }
    } else if (k == "read_only") {
      if (v == "1" || v == "true") {
        c.read_only = true;
      } else if (v == "0" || v == "false") {
        c.read_only = false;
      } else {
        s = bad(StrCat("option read_only must be 0, 1, true or false, got ", show(raw_v)));
      }
    } else if (k == "password_file") {
      if (!password_file.empty() && password_file != v) {
        s = bad("password_file is given twice (URL and --remote-cache-password-file)");
      }
      password_file = v;
      password_file_raw = raw_v;
    } else {
      s = bad(StrCat("unknown option ", show(raw_k), " (options: ", kOptions, ")"));
    }
    if (!s.ok()) return s;
  }
  if (c.cluster && c.database != 0) {
    return bad(StrCat("redis-cluster:// has database 0 only (Redis Cluster refuses SELECT), got ",
                      c.database, "; use ?prefix= to keep teams apart"));
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
        password_file_raw.empty() ? QuoteValue(password_file, 256) : show(password_file_raw);
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

CredentialsSpan FindCredentials(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t begin = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t at = url.rfind('@');
  return {begin, at == std::string::npos || at < begin ? begin : at};
}

std::string RedactRemoteCacheUrl(const std::string& url) {
  const auto [begin, end] = FindCredentials(url);
  if (url.find("://") == std::string::npos || begin == end) return url;
  const std::string creds = url.substr(begin, end - begin);
  const size_t colon = creds.find(':');
  const std::string user = creds.substr(0, colon);
  const bool plain_user = user.find_first_of("/?#@") == std::string::npos;
  if (colon == std::string::npos && plain_user) return url;  // a user name, no password
  return StrCat(url.substr(0, begin), plain_user ? user + ":***" : "***", url.substr(end));
}

}  // namespace coopd
