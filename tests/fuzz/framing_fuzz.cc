// framing_fuzz: bytes -> a stream the daemon or a worker reads frames from (ReadFrame() of
// server/engine/framing.h, over a memfd) -> coop.worker.v1.Request (what a worker reads) or
// coop.worker.v1.Reply (what the daemon reads from a worker, whose compiles run user code).
// The first input byte picks the message type; the rest is the stream.
//
// Properties:
//   - reading stops on end of stream (UNAVAILABLE) or a bad frame (DATA_LOSS), never anything
//     else;
//   - every frame read back is written by WriteFrame() and read again to the same message;
//   - the smoke runs with -malloc_limit_mb: a 4-byte header that claims a large frame must not
//     make the reader allocate it before the bytes arrive.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "coop/v1/worker.pb.h"
#include "server/engine/framing.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// A memory file holding `bytes`, positioned at its start.
class MemFile {
 public:
  explicit MemFile(std::string_view bytes) : fd_(memfd_create("coopd-framing-fuzz", 0)) {
    FUZZ_CHECK(fd_ >= 0, "memfd_create failed");
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t w = write(fd_, bytes.data() + done, bytes.size() - done);
      FUZZ_CHECK(w > 0, "write to the memfd failed");
      done += static_cast<size_t>(w);
    }
    Rewind();
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  void Rewind() { FUZZ_CHECK(lseek(fd_, 0, SEEK_SET) == 0, "lseek failed"); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

template <class Message>
void ReadAll(std::string_view stream) {
  MemFile in(stream);
  // A deadline on every other frame: both paths of the reader.
  for (int frame = 0;; ++frame) {
    Message m;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (frame % 2 == 1) deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    const absl::Status s = coopd::ReadFrame(in.fd(), &m, deadline);
    if (!s.ok()) {
      FUZZ_CHECK(absl::IsUnavailable(s) || absl::IsDataLoss(s), "%s", s.ToString().c_str());
      return;
    }
    MemFile out("");
    const absl::Status w = coopd::WriteFrame(out.fd(), m);
    FUZZ_CHECK(w.ok(), "a frame read cannot be written: %s", w.ToString().c_str());
    out.Rewind();
    Message back;
    const absl::Status r = coopd::ReadFrame(out.fd(), &back, std::nullopt);
    FUZZ_CHECK(r.ok(), "a frame written cannot be read: %s", r.ToString().c_str());
    FUZZ_CHECK(back.SerializeAsString() == m.SerializeAsString(), "a frame does not round-trip");
  }
}

}  // namespace

[[maybe_unused]] static const bool quiet_protobuf = coopd::fuzz::QuietProtobufLog();

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    ReadAll<coop::worker::v1::Reply>(stream);
  } else {
    ReadAll<coop::worker::v1::Request>(stream);
  }
  return 0;
}
