#include "server/engine/framing.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "server/util/strings.h"

namespace coopd {
namespace {

absl::Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    // MSG_NOSIGNAL: a peer that died (a killed worker, or the daemon) is an EPIPE error to
    // report, not a SIGPIPE that would kill this process.
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == ENOTSOCK) w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(StrCat("write: ", std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status ReadAll(int fd, char* p, size_t n,
                     std::optional<std::chrono::steady_clock::time_point> deadline) {
  while (n > 0) {
    int timeout_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return absl::DeadlineExceededError("timed out");
      timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(StrCat("poll: ", std::strerror(errno)));
    }
    if (ready == 0) continue;  // re-check the deadline
    ssize_t r = read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(StrCat("read: ", std::strerror(errno)));
    }
    if (r == 0) return absl::UnavailableError("closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message) {
  std::string body;
  if (!message.SerializeToString(&body)) return absl::InternalError("serialize failed");
  if (body.size() > kMaxFrameBytes) {
    return absl::ResourceExhaustedError(StrCat("message of ", body.size(), " bytes exceeds the ",
                                               kMaxFrameBytes, "-byte frame limit"));
  }
  char header[4];
  const uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  if (absl::Status s = WriteAll(fd, header, 4); !s.ok()) return s;
  return WriteAll(fd, body.data(), body.size());
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite* message,
                       std::optional<std::chrono::steady_clock::time_point> deadline) {
  unsigned char header[4];
  if (absl::Status s = ReadAll(fd, reinterpret_cast<char*>(header), 4, deadline); !s.ok()) {
    return s;
  }
  const uint32_t n = uint32_t{header[0]} | (uint32_t{header[1]} << 8) |
                     (uint32_t{header[2]} << 16) | (uint32_t{header[3]} << 24);
  if (n > kMaxFrameBytes) return absl::DataLossError(StrCat("frame of ", n, " bytes is too large"));
  // The length is the peer's claim: grow the body as its bytes arrive (doubling, from 1 MiB),
  // so a peer that dies or lies after a 4-byte header does not make this side allocate up to
  // kMaxFrameBytes for nothing.
  constexpr size_t kFirstChunk = size_t{1} << 20;
  std::string body;
  while (body.size() < n) {
    const size_t have = body.size();
    const size_t step = std::min<size_t>(n - have, std::max(kFirstChunk, have));
    body.resize(have + step);
    if (absl::Status s = ReadAll(fd, body.data() + have, step, deadline); !s.ok()) {
      return absl::IsUnavailable(s) ? absl::DataLossError("truncated frame") : s;
    }
  }
  if (!message->ParseFromString(body)) return absl::DataLossError("unparsable frame");
  return absl::OkStatus();
}

}  // namespace coopd
