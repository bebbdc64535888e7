// framing.h: length-prefixed protobuf messages over a file descriptor (the daemon <-> worker
// socketpair). A frame is a little-endian u32 length followed by that many bytes.
#pragma once

#include <google/protobuf/message_lite.h>

#include <chrono>
#include <optional>

#include "absl/status/status.h"

namespace coopd {

// Largest frame either side accepts (an LTO-IR or a link input is a few MB at most).
inline constexpr uint32_t kMaxFrameBytes = 512u << 20;

// UNAVAILABLE when the peer has gone (EPIPE).
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message);

// Reads one frame into `message`. DEADLINE_EXCEEDED when `deadline` passes first; UNAVAILABLE
// ("closed") on end of file; DATA_LOSS for an oversized or unparsable frame.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite* message,
                       std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace coopd
