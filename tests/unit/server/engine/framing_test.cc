#include "server/engine/framing.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "coop/v1/worker.pb.h"
#include "tests/unit/data_limit.h"

namespace coopd {
namespace {

// A connected socketpair, closed on destruction.
struct SocketPair {
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseWriter() {
    close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

void WriteRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

std::string Header(uint32_t n) {
  std::string h;
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return h;
}

TEST(Framing, FramesRoundTripInOrder) {
  SocketPair p;
  coop::worker::v1::Reply a, b;
  a.set_id(1);
  a.set_ltoir(std::string(3 << 20, 'x'));  // larger than the socket buffer: a writer thread
  b.set_id(2);
  b.set_message("second");
  std::thread writer([&] {
    EXPECT_TRUE(WriteFrame(p.fds[1], a).ok());
    EXPECT_TRUE(WriteFrame(p.fds[1], b).ok());
  });
  coop::worker::v1::Reply got;
  ASSERT_TRUE(ReadFrame(p.fds[0], &got, std::nullopt).ok());
  EXPECT_EQ(got.id(), 1u);
  EXPECT_EQ(got.ltoir(), a.ltoir());
  ASSERT_TRUE(ReadFrame(p.fds[0], &got, std::nullopt).ok());
  EXPECT_EQ(got.id(), 2u);
  EXPECT_EQ(got.message(), "second");
  writer.join();
  p.CloseWriter();
  const absl::Status eof = ReadFrame(p.fds[0], &got, std::nullopt);
  EXPECT_EQ(eof.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(eof.message(), "closed");
}

TEST(Framing, OversizedAndUnparsableFramesAreDataLoss) {
  SocketPair p;
  WriteRaw(p.fds[1], Header(kMaxFrameBytes + 1));
  coop::worker::v1::Reply got;
  absl::Status s = ReadFrame(p.fds[0], &got, std::nullopt);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "frame of 536870913 bytes is too large");

  SocketPair q;
  WriteRaw(q.fds[1], Header(3) + "\xff\xff\xff");
  s = ReadFrame(q.fds[0], &got, std::nullopt);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "unparsable frame");
}

// Found by the framing fuzz target (its reproducer, 33 bytes claiming a 128 MiB frame, is
// tests/fuzz/corpus/framing/regress-oom-claimed-frame-size): the reader allocated the frame size
// a header claims before the bytes arrived, so a worker that dies (or lies) after 4 bytes made
// the daemon allocate up to 512 MiB. The body now grows as its bytes arrive.
TEST(Framing, AHeaderClaimingAHugeFrameAllocatesOnlyWhatArrives) {
  if (testutil::UnderAddressSanitizer()) GTEST_SKIP() << "ASan build: no data limit";
  testutil::ExpectWithinDataLimit(256, [] {
    SocketPair p;
    WriteRaw(p.fds[1], Header(kMaxFrameBytes) + "a few bytes");
    p.CloseWriter();
    coop::worker::v1::Reply got;
    const absl::Status s = ReadFrame(p.fds[0], &got, std::nullopt);
    return s.code() == absl::StatusCode::kDataLoss && s.message() == "truncated frame";
  });
}

TEST(Framing, ADeadlineEndsAReadThatStalls) {
  SocketPair p;
  WriteRaw(p.fds[1], Header(100) + "only part of it");
  coop::worker::v1::Reply got;
  const absl::Status s =
      ReadFrame(p.fds[0], &got, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace coopd
