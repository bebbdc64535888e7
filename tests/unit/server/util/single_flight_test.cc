// Unit tests of server/util/single_flight.h and cancel_token.h: a waiter that cancels leaves
// its flight, the last one to leave abandons it (its token is cancelled, so the work stops), and
// the abandoned work's late completion reaches nobody, not even a new flight for the same key.
#include "server/util/single_flight.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coopd {
namespace {

using Flight = SingleFlight<int>;

struct Answers {
  std::vector<absl::StatusOr<int>> got;
  Flight::Done Record() {
    return [this](const absl::StatusOr<int>& r) { got.push_back(r); };
  }
};

Flight::JoinOptions Cancellable(const std::shared_ptr<CancelToken>& token) {
  Flight::JoinOptions o;
  o.cancel = token;
  return o;
}

TEST(CancelToken, RunsCallbacksOnceAndLateOnesAtOnce) {
  CancelToken token;
  int runs = 0;
  token.OnCancel([&](const absl::Status& why) {
    EXPECT_EQ(why.code(), absl::StatusCode::kDeadlineExceeded);
    ++runs;
  });
  const uint64_t removed = token.OnCancel([&](const absl::Status&) { runs += 100; });
  token.Remove(removed);
  EXPECT_TRUE(token.Cancel(absl::DeadlineExceededError("deadline")));
  EXPECT_FALSE(token.Cancel(absl::CancelledError("again")));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(token.OnCancel([&](const absl::Status&) { ++runs; }), 0u);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(SingleFlight, AWaiterThatCancelsLeavesAndTheWorkGoesOnForTheOthers) {
  Flight flights;
  Answers leader, impatient;
  auto leader_token = std::make_shared<CancelToken>();
  auto impatient_token = std::make_shared<CancelToken>();
  std::shared_ptr<CancelToken> work;
  ASSERT_EQ(flights.Join("k", leader.Record(), Cancellable(leader_token), &work),
            Flight::Joined::kLeader);
  ASSERT_NE(work, nullptr);
  ASSERT_EQ(flights.Join("k", impatient.Record(), Cancellable(impatient_token)),
            Flight::Joined::kWaiter);
  impatient_token->Cancel(absl::CancelledError("client cancelled"));
  ASSERT_EQ(impatient.got.size(), 1u) << "answered at once";
  EXPECT_EQ(impatient.got[0].status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(work->cancelled()) << "the leader still waits: the work goes on";
  EXPECT_EQ(flights.waiters("k"), 1u);
  flights.Complete("k", 7, work);
  ASSERT_EQ(leader.got.size(), 1u);
  EXPECT_EQ(*leader.got[0], 7);
  EXPECT_EQ(impatient.got.size(), 1u) << "never answered twice";
  EXPECT_EQ(flights.left(), 1u);
  EXPECT_EQ(flights.abandoned(), 0u);
}

TEST(SingleFlight, TheLastWaiterToLeaveAbandonsTheFlightAndCancelsItsWork) {
  Flight flights;
  Answers a, b;
  auto ta = std::make_shared<CancelToken>();
  auto tb = std::make_shared<CancelToken>();
  std::shared_ptr<CancelToken> work;
  int ended = 0;
  Flight::JoinOptions lead = Cancellable(ta);
  lead.on_end = [&] { ++ended; };
  ASSERT_EQ(flights.Join("k", a.Record(), lead, &work), Flight::Joined::kLeader);
  ASSERT_EQ(flights.Join("k", b.Record(), Cancellable(tb)), Flight::Joined::kWaiter);
  absl::Status stopped;
  work->OnCancel([&](const absl::Status& why) { stopped = why; });
  ta->Cancel(absl::CancelledError("a cancelled"));
  EXPECT_TRUE(stopped.ok()) << "b still waits";
  tb->Cancel(absl::DeadlineExceededError("b's deadline"));
  EXPECT_EQ(stopped.code(), absl::StatusCode::kDeadlineExceeded) << "the work was cancelled";
  EXPECT_EQ(ended, 1) << "on_end (e.g. the farm lease's release) ran";
  EXPECT_EQ(b.got.at(0).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(flights.abandoned(), 1u);

  // A new request for the key starts fresh work; the abandoned work's late completion (given
  // its token) reaches nobody, and the new flight completes with its own result.
  Answers c;
  std::shared_ptr<CancelToken> fresh;
  ASSERT_EQ(flights.Join("k", c.Record(), Flight::JoinOptions{}, &fresh), Flight::Joined::kLeader);
  flights.Complete("k", absl::CancelledError("killed"), work);
  EXPECT_TRUE(c.got.empty()) << "the abandoned work's result did not reach the new flight";
  flights.Complete("k", 9, fresh);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(*c.got[0], 9);
  EXPECT_EQ(ended, 1) << "on_end runs once";
  EXPECT_EQ(a.got.size(), 1u);
  EXPECT_EQ(b.got.size(), 1u);
}

TEST(SingleFlight, ACallerCancelledBeforeItJoinsLeavesAtOnce) {
  Flight flights;
  Answers a;
  auto token = std::make_shared<CancelToken>();
  token->Cancel(absl::CancelledError("gone"));
  std::shared_ptr<CancelToken> work;
  EXPECT_EQ(flights.Join("k", a.Record(), Cancellable(token), &work), Flight::Joined::kLeader);
  ASSERT_EQ(a.got.size(), 1u);
  EXPECT_EQ(a.got[0].status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(work->cancelled()) << "its work must not start (or stops at once)";
  EXPECT_EQ(flights.waiters("k"), 0u);
}

TEST(SingleFlight, WaitersWithoutATokenKeepTheWorkAlive) {
  Flight flights;
  Answers a, b;
  auto ta = std::make_shared<CancelToken>();
  std::shared_ptr<CancelToken> work;
  ASSERT_EQ(flights.Join("k", a.Record(), Cancellable(ta), &work), Flight::Joined::kLeader);
  ASSERT_EQ(flights.Join("k", b.Record()), Flight::Joined::kWaiter);
  ta->Cancel(absl::CancelledError("a cancelled"));
  EXPECT_FALSE(work->cancelled());
  flights.Complete("k", 3, work);
  EXPECT_EQ(*b.got.at(0), 3);
}

TEST(SingleFlight, ARefusedLeaderJoinsWorkInFlightButStartsNone) {
  Flight flights;
  Answers a, b, c;
  Flight::JoinOptions refused;
  refused.lead_refusal = absl::ResourceExhaustedError("over quota");
  EXPECT_EQ(flights.Join("k", a.Record(), refused), Flight::Joined::kRefused);
  EXPECT_EQ(a.got.at(0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(flights.waiters("k"), 0u);
  std::shared_ptr<CancelToken> work;
  ASSERT_EQ(flights.Join("k", b.Record(), Flight::JoinOptions{}, &work), Flight::Joined::kLeader);
  EXPECT_EQ(flights.Join("k", c.Record(), refused), Flight::Joined::kWaiter);
  flights.Complete("k", 5, work);
  EXPECT_EQ(*c.got.at(0), 5);
  // A finished result the re-check finds is served, refusal or not.
  Answers d;
  refused.recheck = [] { return std::optional<int>(5); };
  EXPECT_EQ(flights.Join("k", d.Record(), refused), Flight::Joined::kServed);
  EXPECT_EQ(*d.got.at(0), 5);
}

}  // namespace
}  // namespace coopd
