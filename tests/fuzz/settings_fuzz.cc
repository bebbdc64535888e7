// settings_fuzz: bytes -> coopd's settings (server/daemon/settings.h: flags parsed by CLI11,
// the TOML config file by toml++, every value through its codec) and the farm tier's Redis URL
// (server/cache/remote_config.h). Both are read before the daemon serves anything, from files and
// flags that an operator, a deployment template or a config-management tool writes.
//
// The input is split at NUL bytes: the config file's text, then the command-line arguments (one
// per line), then a Redis URL.
//
// Properties:
//   - settings load, or fail with INVALID_ARGUMENT whose message is one escaped line of at most
//     16 KiB (it reaches a terminal or a journal as it is);
//   - a configuration that loads prints (--print-config) without the farm tier's password, and
//     prints again identically (the printer reads only the configuration);
//   - a Redis URL parses or fails with INVALID_ARGUMENT, one escaped line; a password the
//     harness plants between "://" and the URL's last '@' (where credentials may be, however
//     malformed the rest of the URL is: a '?' in a password ends the authority early) is not in
//     the error, and a parsed URL's Redacted() form holds no password (the user name it shows).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/cache/remote_config.h"
#include "server/daemon/daemon.h"
#include "server/daemon/settings.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

constexpr size_t kMaxErrorBytes = 16 * 1024;

// Splits at the first two NUL bytes; missing parts are empty.
std::vector<std::string> Parts(std::string_view input) {
  std::vector<std::string> parts;
  for (int i = 0; i < 2; ++i) {
    const size_t nul = input.find('\0');
    parts.emplace_back(input.substr(0, nul));
    input = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  }
  parts.emplace_back(input);
  return parts;
}

// A file of this process's own for the config text (rewritten for every input).
const std::string& ConfigPath() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/coopd-settings-fuzz-XXXXXX";
    const int fd = mkstemp(tmpl);
    FUZZ_CHECK(fd >= 0, "mkstemp failed");
    close(fd);
    return std::string(tmpl);
  }();
  return path;
}

bool Init() {
  // The environment is a source of settings: none of the fuzzer's own may leak in.
  for (char** e = environ; e != nullptr && *e != nullptr;) {
    const std::string var(*e);
    if (var.rfind("COOPD_", 0) == 0 || var.rfind("XDG_", 0) == 0) {
      unsetenv(var.substr(0, var.find('=')).c_str());
      e = environ;
      continue;
    }
    ++e;
  }
  std::atexit([] { unlink(ConfigPath().c_str()); });
  return true;
}

// A password of the harness's own, planted in the URL's credentials: no fixed text of an error
// holds any 4 bytes of it.
constexpr char kCanary[] = "Kq9ZwXv7";

void CheckUrl(std::string url) {
  // Where credentials may be: between "://" and the URL's last '@', however malformed the rest.
  // The canary goes somewhere in there (where: from the input), so the check below cannot
  // mistake the fixed words of an error for a leak.
  const size_t scheme = url.find("://");
  const size_t at = url.rfind('@');
  const bool has_credentials =
      scheme != std::string::npos && at != std::string::npos && at >= scheme + 3;
  if (has_credentials) {
    const size_t span = at - (scheme + 3);
    url.insert(scheme + 3 + (url.size() * 7919) % (span + 1), kCanary);
  }
  auto parsed = coopd::ParseRemoteCacheUrl(url, "--remote-cache");
  if (parsed.ok()) {
    const std::string redacted = parsed->Redacted();
    if (!parsed->password.empty()) {
      FUZZ_CHECK(redacted.find(":" + parsed->password + "@") == std::string::npos,
                 "Redacted() shows the password: %s", redacted.c_str());
    }
    return;
  }
  const std::string message(parsed.status().message());
  FUZZ_CHECK(absl::IsInvalidArgument(parsed.status()), "%s", parsed.status().ToString().c_str());
  FUZZ_CHECK(message.size() <= kMaxErrorBytes && coopd::fuzz::IsOneSafeLine(message),
             "a URL error is not one short escaped line (%zu bytes)", message.size());
  if (!has_credentials) return;
  const std::string canary = kCanary;
  for (size_t i = 0; i + 4 <= canary.size(); ++i) {
    const std::string piece = canary.substr(i, 4);
    // The input may hold the canary's bytes elsewhere too, where quoting them is fine.
    if (url.find(piece) != url.rfind(piece)) continue;
    FUZZ_CHECK(message.find(piece) == std::string::npos,
               "a URL error quotes part of the credentials (\"%s\"): %s", piece.c_str(),
               message.c_str());
  }
}

void CheckSettings(const std::string& config_text, const std::string& args_text) {
  if (FILE* f = std::fopen(ConfigPath().c_str(), "wb")) {
    std::fwrite(config_text.data(), 1, config_text.size(), f);
    std::fclose(f);
  }
  std::vector<std::string> args = {"coopd", "--config", ConfigPath()};
  for (size_t start = 0; start < args_text.size() && args.size() < 64;) {
    size_t nl = args_text.find('\n', start);
    if (nl == std::string::npos) nl = args_text.size();
    args.push_back(args_text.substr(start, nl - start));
    start = nl + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  coopd::DaemonConfig config;
  auto loaded = coopd::LoadSettings(static_cast<int>(args.size()), argv.data(), &config);
  if (!loaded.ok()) {
    const std::string message(loaded.status().message());
    FUZZ_CHECK(absl::IsInvalidArgument(loaded.status()), "%s", loaded.status().ToString().c_str());
    FUZZ_CHECK(message.size() <= kMaxErrorBytes && coopd::fuzz::IsOneSafeLine(message),
               "a settings error is not one short escaped line (%zu bytes)", message.size());
    return;
  }
  if (loaded->help || loaded->version) return;
  const std::string printed = coopd::PrintConfig(config, *loaded);
  FUZZ_CHECK(printed == coopd::PrintConfig(config, *loaded), "--print-config is not stable");
  if (!config.remote_url.empty()) {
    auto remote = coopd::ParseRemoteCacheUrl(config.remote_url, "remote.url");
    if (remote.ok() && !remote->password.empty()) {
      FUZZ_CHECK(printed.find(":" + remote->password + "@") == std::string::npos,
                 "--print-config shows the farm tier's password");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = Init();
  (void)init;
  const auto parts = Parts(std::string_view(reinterpret_cast<const char*>(data), size));
  CheckSettings(parts[0], parts[1]);
  CheckUrl(parts[2]);
  return 0;
}
