// MemoryReply::Matches, the check that keeps a memo entry's encoded reply (memory_reply.h) from
// being served with another value's bytes: it must tell the value it was made from from every
// other one, including a new value at the address of a freed one.
#include "server/service/memory_reply.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace coopd {
namespace {

std::shared_ptr<const CacheValue> Value(const char* meta) {
  return std::make_shared<const CacheValue>(meta, std::string(1000, 'x'));
}

TEST(MemoryReply, MatchesOnlyTheValuesItWasMadeFrom) {
  auto ltoir = Value("a"), bitcode = Value("b");
  MemoryReply both;
  both.ltoir_value = ltoir;
  both.bitcode_value = bitcode;
  EXPECT_TRUE(both.Matches(ltoir, bitcode));
  EXPECT_FALSE(both.Matches(ltoir, nullptr));
  EXPECT_FALSE(both.Matches(nullptr, bitcode));
  EXPECT_FALSE(both.Matches(bitcode, ltoir));
  // Equal bytes in another object are another value (it may have come from another replica).
  EXPECT_FALSE(both.Matches(std::make_shared<const CacheValue>(*ltoir), bitcode));

  MemoryReply ltoir_only;
  ltoir_only.ltoir_value = ltoir;
  EXPECT_TRUE(ltoir_only.Matches(ltoir, nullptr));
  EXPECT_FALSE(ltoir_only.Matches(ltoir, bitcode));
  EXPECT_FALSE(MemoryReply().Matches(ltoir, nullptr));
  EXPECT_TRUE(MemoryReply().Matches(nullptr, nullptr));
}

TEST(MemoryReply, ANewValueWhereAFreedOneWasDoesNotMatch) {
  // Values allocated apart from their control blocks: the memory of a freed one is released at
  // once (the reply's weak pointer keeps only the control block), so a new value may land at
  // its very address, which a check by address would take for the old one.
  const auto separate = [](const char* meta) {
    return std::shared_ptr<const CacheValue>(new CacheValue(meta, std::string(1000, 'x')));
  };
  MemoryReply reply;
  const void* freed_at = nullptr;
  {
    auto value = separate("old");
    reply.ltoir_value = value;
    freed_at = value.get();
    ASSERT_TRUE(reply.Matches(value, nullptr));
  }
  EXPECT_TRUE(reply.ltoir_value.expired());
  std::vector<std::shared_ptr<const CacheValue>> values;
  bool reused = false;
  for (int i = 0; i < 1000 && !reused; ++i) {
    values.push_back(separate("new"));
    reused = values.back().get() == freed_at;
    EXPECT_FALSE(reply.Matches(values.back(), nullptr)) << "value " << i;
  }
  // glibc hands the freed block back at once; without that the case above was not exercised.
  if (!reused) GTEST_SKIP() << "no new value reused the freed one's address";
}

}  // namespace
}  // namespace coopd
