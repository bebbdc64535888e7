#include "server/util/config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coop/paths.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

absl::StatusOr<std::string> ReadConfigFile(const std::string& path, const std::string& flag,
                                           bool secret) {
  const std::string what = StrCat(flag, " ", QuoteValue(path, 200));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(StrCat(what, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st {};
  std::string text;
  absl::Status status;
  if (fstat(fd, &st) != 0) {
    status = absl::FailedPreconditionError(StrCat(what, ": cannot stat: ", std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::FailedPreconditionError(StrCat(what, ": not a regular file"));
  } else if (std::string why = secret ? coop::UnsafeSecretReason(
                                            st.st_mode, static_cast<long>(st.st_uid), "secrets")
                                      : std::string();
             !why.empty()) {
    status = absl::FailedPreconditionError(StrCat(what, ": ", why, " and start again"));
  } else if (st.st_size > (1 << 20)) {
    status = absl::FailedPreconditionError(StrCat(what, ": larger than 1 MiB"));
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    if (n < 0) {
      status = absl::FailedPreconditionError(StrCat(what, ": cannot read: ", std::strerror(errno)));
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

}  // namespace coopd
