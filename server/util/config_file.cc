#include "server/util/config_file.h"

#include <optional>
#include <utility>

#include "coop/paths.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

absl::StatusOr<std::string> ReadConfigFile(const std::string& path, const std::string& flag,
                                           bool secret) {
  std::string error;
  bool unsafe = false;
  std::optional<std::string> text =
      coop::ReadSmallFile(path, secret ? "secrets" : nullptr, &error, &unsafe);
  if (text) return *std::move(text);
  return absl::FailedPreconditionError(
      StrCat(flag, " ", QuoteValue(path, 200), ": ", error, unsafe ? " and start again" : ""));
}

}  // namespace coopd
