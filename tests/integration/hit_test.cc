// Integration tests of the hit path (issue 17 item 1): digest-only replies between a real coopd
// on a temporary Unix socket and coop::Client's artifact cache, and the request memo.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "coop/client.h"
#include "coop/v1/coop.grpc.pb.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

namespace v1 = coop::v1;

std::unique_ptr<v1::Coop::Stub> RawStub(const TestDaemon& d) {
  return v1::Coop::NewStub(
      grpc::CreateChannel("unix:" + d.process.socket_path(), grpc::InsecureChannelCredentials()));
}

v1::SpecializeRequest BlockReduceRequest() {
  v1::SpecializeRequest req;
  auto* spec = req.mutable_spec();
  spec->set_family("block_reduce");
  spec->set_dtype("float32");
  spec->mutable_block()->set_x(128);
  spec->set_arch("sm_90");
  return req;
}

grpc::Status Call(v1::Coop::Stub& stub, const v1::SpecializeRequest& req,
                  v1::SpecializeResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return stub.Specialize(&ctx, req, resp);
}

// A client of `d` whose artifact cache holds at most `entries` artifacts and `bytes` bytes.
coop::Client CachingClient(const TestDaemon& d, size_t entries, uint64_t bytes = 64 << 20) {
  coop::ClientOptions options;
  options.socket_path = d.process.socket_path();
  options.artifact_cache_entries = entries;
  options.artifact_cache_bytes = bytes;
  return coop::Client(options);
}

coop::Spec Block(uint32_t x) {
  coop::Spec s = BlockReduceF32();
  s.block = {x, 1, 1};
  return s;
}

// On the wire: a request holding the artifact's key and digest gets the metadata alone (under
// 1 KB), a wrong digest, a wrong key or the other format gets the whole artifact.
TEST(Hit, DigestOnlyReplyCarriesMetadataWithoutBytesAndStaleDigestsGetTheBytes) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto stub = RawStub(d);
  v1::SpecializeResponse full;
  ASSERT_TRUE(Call(*stub, BlockReduceRequest(), &full).ok());
  const v1::Artifact& a = full.artifact();
  ASSERT_FALSE(a.ltoir().empty());
  EXPECT_FALSE(a.bytes_omitted());
  ASSERT_EQ(a.digest().size(), 64u) << "every reply names its bytes' digest";

  v1::SpecializeRequest held = BlockReduceRequest();
  auto* have = held.add_have();
  have->set_format(v1::FORMAT_LTOIR);
  have->set_key(a.key());
  have->set_digest(a.digest());
  v1::SpecializeResponse slim;
  ASSERT_TRUE(Call(*stub, held, &slim).ok());
  const v1::Artifact& s = slim.artifact();
  EXPECT_TRUE(s.bytes_omitted());
  EXPECT_TRUE(s.ltoir().empty());
  EXPECT_TRUE(s.source().empty());
  EXPECT_EQ(s.key(), a.key());
  EXPECT_EQ(s.digest(), a.digest());
  EXPECT_EQ(s.origin(), v1::ORIGIN_MEMORY);
  EXPECT_EQ(s.temp_storage().bytes(), a.temp_storage().bytes());
  EXPECT_EQ(s.parts_size(), a.parts_size());
  // A caller that did not say it keeps the metadata (an older client) gets it.
  ASSERT_EQ(s.entries_size(), a.entries_size());
  EXPECT_EQ(s.entries(0).declaration(), a.entries(0).declaration());
  EXPECT_TRUE(s.has_spec());
  EXPECT_TRUE(s.has_toolchain());
  EXPECT_LT(slim.ByteSizeLong(), 1024u);

  // One that does gets none of what the key fixes: entries, specs, toolchain.
  held.mutable_have(0)->set_holds_metadata(true);
  v1::SpecializeResponse slimmer;
  ASSERT_TRUE(Call(*stub, held, &slimmer).ok());
  const v1::Artifact& m = slimmer.artifact();
  EXPECT_TRUE(m.bytes_omitted());
  EXPECT_EQ(m.key(), a.key());
  EXPECT_EQ(m.digest(), a.digest());
  EXPECT_EQ(m.temp_storage().bytes(), a.temp_storage().bytes());
  EXPECT_EQ(m.parts_size(), a.parts_size());
  EXPECT_EQ(m.entries_size(), 0);
  EXPECT_FALSE(m.has_spec());
  EXPECT_FALSE(m.has_toolchain());
  EXPECT_EQ(m.parts(0).entries_size(), 0);
  EXPECT_FALSE(m.parts(0).has_spec());
  EXPECT_LT(slimmer.ByteSizeLong(), 512u)
      << "a digest-only hit moves less than 1 KB, framing and all";

  // Stale or wrong: the whole artifact, as without `have`.
  for (int variant = 0; variant < 3; ++variant) {
    v1::SpecializeRequest stale = held;
    auto* h = stale.mutable_have(0);
    if (variant == 0) h->set_digest(std::string(64, '0'));
    if (variant == 1) h->set_key(std::string(64, 'a'));
    if (variant == 2) h->set_format(v1::FORMAT_BITCODE);
    v1::SpecializeResponse r;
    ASSERT_TRUE(Call(*stub, stale, &r).ok());
    EXPECT_FALSE(r.artifact().bytes_omitted()) << "variant " << variant;
    EXPECT_EQ(r.artifact().ltoir(), a.ltoir()) << "variant " << variant;
  }
  coop::Stats st = d.Stats();
  EXPECT_EQ(st.digest_only_replies, 2u);
  EXPECT_EQ(st.bytes_omitted, 2 * (a.ltoir().size() + a.source().size() + a.compile_log().size()));
}

// A memory hit answered on the gRPC thread sends its LTO-IR and bitcode as slices of the cached
// value (server/rpc/reply_writer.h): what arrives is the artifact the compile answered, field by
// field, for each format and both, with only the origin changed.
TEST(Hit, ZeroCopyMemoryHitsDecodeAsTheCompiledReplyForEachFormat) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto stub = RawStub(d);
  const std::vector<std::vector<v1::Format>> cases = {
      {v1::FORMAT_LTOIR}, {v1::FORMAT_BITCODE}, {v1::FORMAT_LTOIR, v1::FORMAT_BITCODE}};
  for (const auto& formats : cases) {
    v1::SpecializeRequest req = BlockReduceRequest();
    for (auto f : formats) req.add_formats(f);
    v1::SpecializeResponse first;
    const grpc::Status s = Call(*stub, req, &first);
    if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      GTEST_SKIP() << "no clang for bitcode: " << s.error_message();
    }
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (int repeat = 0; repeat < 2; ++repeat) {
      v1::SpecializeResponse hit;
      ASSERT_TRUE(Call(*stub, req, &hit).ok());
      EXPECT_EQ(hit.artifact().origin(), v1::ORIGIN_MEMORY);
      google::protobuf::util::MessageDifferencer differ;
      differ.IgnoreField(v1::Artifact::descriptor()->FindFieldByName("origin"));
      differ.IgnoreField(v1::BitcodeModule::descriptor()->FindFieldByName("origin"));
      std::string report;
      differ.ReportDifferencesToString(&report);
      EXPECT_TRUE(differ.Compare(first, hit)) << formats.size() << " formats: " << report;
      if (formats.back() == v1::FORMAT_BITCODE) {
        EXPECT_FALSE(hit.artifact().bitcode().data().empty());
        EXPECT_FALSE(hit.artifact().bitcode().key().empty());
      } else {
        EXPECT_FALSE(hit.artifact().ltoir().empty());
      }
    }
  }
  EXPECT_GE(d.Stats().memory_hits, 6u);
}

// Through coop::Client: the second request is answered digest-only, yet the caller gets the
// same complete artifact (bytes, source and all).
TEST(Hit, ClientFillsDigestOnlyRepliesFromItsCache) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto first = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(first) << first.error().message;
  auto second = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(second) << second.error().message;
  coop::Stats st = d.Stats();
  EXPECT_EQ(st.digest_only_replies, 1u);
  EXPECT_GE(st.bytes_omitted, first->ltoir.size());
  EXPECT_EQ(second->origin, coop::Origin::kMemory);
  EXPECT_EQ(second->ltoir, first->ltoir);
  EXPECT_EQ(second->source, first->source);
  EXPECT_EQ(second->key, first->key);
  ASSERT_EQ(second->entries.size(), first->entries.size());
  EXPECT_EQ(second->entries[0].declaration, first->entries[0].declaration);

  // A client without the cache always gets (and sends for) the whole artifact.
  coop::Client plain = CachingClient(d, 0);
  for (int i = 0; i < 2; ++i) {
    auto r = plain.Specialize(BlockReduceF32());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->ltoir, first->ltoir);
  }
  EXPECT_EQ(d.Stats().digest_only_replies, 1u);
}

// coop::Bytes: an artifact served from the client's cache shares the held bytes (the same
// memory, not a copy), copies of an artifact share them too, and they outlive the Client and
// the daemon's connection (gRPC's slices and the client's buffer pool both).
TEST(Hit, ArtifactBytesAreSharedNotCopiedAndOutliveTheClient) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::Result<coop::Artifact> first = coop::Error{}, second = coop::Error{};
  std::string reference;
  {
    coop::Client client = CachingClient(d, 16);
    first = client.Specialize(BlockReduceF32());
    ASSERT_TRUE(first) << first.error().message;
    second = client.Specialize(BlockReduceF32());
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(d.Stats().digest_only_replies, 1u);
    ASSERT_FALSE(first->ltoir.empty());
    // The digest-only hit's LTO-IR is the first reply's buffer, held by the client's cache.
    EXPECT_EQ(second->ltoir.data(), first->ltoir.data());
    const coop::Artifact copy = *second;
    EXPECT_EQ(copy.ltoir.data(), first->ltoir.data());
    reference = first->ltoir.str();
    EXPECT_NE(reference.data(), first->ltoir.data());  // str() copies
  }
  // The client (its cache, channel and pool) is gone; the bytes are still the artifact's.
  EXPECT_EQ(second->ltoir, reference);
  EXPECT_EQ(first->ltoir, reference);
  first = coop::Error{};
  EXPECT_EQ(second->ltoir, reference);  // the last reference still holds them

  // Without the cache every reply is read into a buffer of its own, equal to the cached one.
  coop::Client plain = CachingClient(d, 0);
  std::vector<coop::Artifact> held;
  for (int i = 0; i < 4; ++i) {
    auto r = plain.Specialize(BlockReduceF32());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->ltoir, reference);
    for (const auto& h : held) EXPECT_NE(h.ltoir.data(), r->ltoir.data());  // all alive at once
    held.push_back(*r);
  }
  held.clear();  // their buffers go back to the pool, to be filled again
  auto again = plain.Specialize(BlockReduceF32());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->ltoir, reference);
}

// The client's cache holds at most artifact_cache_entries artifacts: with one, alternating two
// specs never gets a digest-only reply; repeating one does.
TEST(Hit, ClientArtifactCacheIsBounded) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::Client client = CachingClient(d, 1);
  auto a = client.Specialize(Block(128));
  auto b = client.Specialize(Block(256));
  auto a2 = client.Specialize(Block(128));  // a was evicted by b: the whole artifact
  ASSERT_TRUE(a && b && a2);
  EXPECT_EQ(d.Stats().digest_only_replies, 0u);
  auto a3 = client.Specialize(Block(128));  // held now
  ASSERT_TRUE(a3);
  EXPECT_EQ(d.Stats().digest_only_replies, 1u);
  EXPECT_EQ(a3->ltoir, a->ltoir);
  EXPECT_NE(a->key, b->key);

  // A byte budget smaller than one artifact keeps nothing.
  coop::Client tiny = CachingClient(d, 16, a->ltoir.size() / 2);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(tiny.Specialize(Block(128)));
  EXPECT_EQ(d.Stats().digest_only_replies, 1u);
}

// A repeated request takes its key from the memo; a request that differs in any field is not
// served another request's entry.
TEST(Hit, RepeatedRequestsTakeTheirKeysFromTheMemo) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::Client client = CachingClient(d, 0);
  auto a = client.Specialize(Block(128));
  ASSERT_TRUE(a) << a.error().message;
  coop::Stats st = d.Stats();
  EXPECT_EQ(st.memo_hits, 0u);
  EXPECT_EQ(st.memo_entries, 1u);
  auto again = client.Specialize(Block(128));
  ASSERT_TRUE(again);
  st = d.Stats();
  EXPECT_EQ(st.memo_hits, 1u);
  EXPECT_EQ(again->key, a->key);
  EXPECT_EQ(again->ltoir, a->ltoir);
  auto other = client.Specialize(Block(256));
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_NE(other->key, a->key);
  EXPECT_EQ(d.Stats().memo_hits, 1u);
  EXPECT_EQ(d.Stats().memo_entries, 2u);
  // Refused requests are never remembered.
  coop::Spec bad = Block(128);
  bad.items_per_thread = 0;
  bad.dtype = "float31";
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(client.Specialize(bad));
  st = d.Stats();
  EXPECT_EQ(st.memo_entries, 2u);
  EXPECT_EQ(st.invalid_requests, 2u);
}

// Each request counts one memo lookup, hit or miss, even when the gRPC thread's fast path
// (memory only) looked it up first and could not answer: a miss there goes on to the executor,
// and so does a memo entry whose artifact left the memory tier (here: purged from every tier, so
// the request recompiles under the remembered key).
TEST(Hit, EachRequestCountsOneMemoHitOrMiss) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::Client client = CachingClient(d, 0);
  auto first = client.Specialize(Block(128));
  ASSERT_TRUE(first) << first.error().message;
  coop::Stats st = d.Stats();
  EXPECT_EQ(st.memo_misses, 1u);
  EXPECT_EQ(st.memo_hits, 0u);
  EXPECT_EQ(st.memo_entries, 1u);
  auto hit = client.Specialize(Block(128));
  ASSERT_TRUE(hit) << hit.error().message;
  st = d.Stats();
  EXPECT_EQ(st.memo_hits, 1u);
  EXPECT_EQ(st.memo_misses, 1u);
  EXPECT_EQ(hit->origin, coop::Origin::kMemory);

  auto purged = client.Purge({}, /*all=*/true);
  ASSERT_TRUE(purged) << purged.error().message;
  ASSERT_GE(*purged, 1u);
  auto again = client.Specialize(Block(128));  // memo hit, then no tier holds the artifact
  ASSERT_TRUE(again) << again.error().message;
  st = d.Stats();
  EXPECT_EQ(st.memo_hits, 2u) << "one memo hit for the request, not one per lookup";
  EXPECT_EQ(st.memo_misses, 1u);
  EXPECT_EQ(st.compiles, 2u);
  EXPECT_EQ(again->key, first->key);
  EXPECT_EQ(again->ltoir, first->ltoir);
  EXPECT_EQ(st.requests, 3u);
}

// A memory hit is served from the reply its memo entry keeps encoded (memory_reply.h), made
// from the memory tier's value of the time. Once the tier holds another value under the key
// (here: purged and compiled again, with other timings), the hit is the new value's, field by
// field, never the old reply. (A recompile remembers the request anew, dropping the old reply;
// a value replaced behind an unchanged memo entry, say from another replica through the farm
// tier, is caught by MemoryReply::Matches: tests/unit/server/service/memory_reply_test.cc.)
TEST(Hit, MemoryHitFollowsTheCachedValueNotTheFirstReply) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto stub = RawStub(d);
  google::protobuf::util::MessageDifferencer differ;
  differ.IgnoreField(v1::Artifact::descriptor()->FindFieldByName("origin"));
  std::string report;
  differ.ReportDifferencesToString(&report);

  v1::SpecializeResponse first, hit;
  ASSERT_TRUE(Call(*stub, BlockReduceRequest(), &first).ok());
  ASSERT_TRUE(Call(*stub, BlockReduceRequest(), &hit).ok());
  EXPECT_EQ(hit.artifact().origin(), v1::ORIGIN_MEMORY);
  EXPECT_TRUE(differ.Compare(first, hit)) << report;

  coop::Client admin = CachingClient(d, 0);
  auto purged = admin.Purge({}, /*all=*/true);
  ASSERT_TRUE(purged) << purged.error().message;
  v1::SpecializeResponse second;
  ASSERT_TRUE(Call(*stub, BlockReduceRequest(), &second).ok());
  EXPECT_EQ(second.artifact().origin(), v1::ORIGIN_COMPILED);
  ASSERT_FALSE(google::protobuf::util::MessageDifferencer::Equals(first, second))
      << "the two compiles answered identical replies (timings and all): this test cannot "
         "tell the old reply from the new";
  for (int repeat = 0; repeat < 2; ++repeat) {
    v1::SpecializeResponse again;
    ASSERT_TRUE(Call(*stub, BlockReduceRequest(), &again).ok());
    EXPECT_EQ(again.artifact().origin(), v1::ORIGIN_MEMORY);
    report.clear();
    EXPECT_TRUE(differ.Compare(second, again)) << "repeat " << repeat << ": " << report;
  }
  EXPECT_EQ(d.Stats().compiles, 2u);
}

v1::SpecializeBundleRequest BundleRequest() {
  v1::SpecializeBundleRequest req;
  for (const char* family : {"block_reduce", "block_scan"}) {
    auto* spec = req.add_specs();
    spec->set_family(family);
    spec->set_dtype("float32");
    spec->mutable_block()->set_x(128);
    spec->set_arch("sm_90");
  }
  return req;
}

grpc::Status CallBundle(v1::Coop::Stub& stub, const v1::SpecializeBundleRequest& req,
                        v1::SpecializeResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return stub.SpecializeBundle(&ctx, req, resp);
}

// A repeated bundle is a memo hit served from memory (answered on the gRPC thread, its LTO-IR
// sent as a slice of the cached value): the reply is the compiled one, field by field, with only
// the origin changed, and the counters move as for a single spec.
TEST(Hit, RepeatedBundleIsAMemoryHitWithTheSameBytes) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto stub = RawStub(d);
  v1::SpecializeResponse first;
  const grpc::Status s = CallBundle(*stub, BundleRequest(), &first);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(first.artifact().parts_size(), 2);
  ASSERT_FALSE(first.artifact().ltoir().empty());
  EXPECT_EQ(first.artifact().origin(), v1::ORIGIN_COMPILED);
  coop::Stats st = d.Stats();
  EXPECT_EQ(st.memo_hits, 0u);
  EXPECT_EQ(st.memo_misses, 1u);
  EXPECT_EQ(st.memo_entries, 1u);
  const uint64_t memory_hits = st.memory_hits;
  for (int repeat = 1; repeat <= 2; ++repeat) {
    v1::SpecializeResponse hit;
    ASSERT_TRUE(CallBundle(*stub, BundleRequest(), &hit).ok());
    EXPECT_EQ(hit.artifact().origin(), v1::ORIGIN_MEMORY);
    EXPECT_EQ(hit.artifact().ltoir(), first.artifact().ltoir());
    google::protobuf::util::MessageDifferencer differ;
    differ.IgnoreField(v1::Artifact::descriptor()->FindFieldByName("origin"));
    std::string report;
    differ.ReportDifferencesToString(&report);
    EXPECT_TRUE(differ.Compare(first, hit)) << report;
    st = d.Stats();
    EXPECT_EQ(st.memo_hits, static_cast<uint64_t>(repeat));
    EXPECT_EQ(st.memo_misses, 1u);
    EXPECT_EQ(st.memory_hits, memory_hits + repeat);
  }
  EXPECT_EQ(st.requests, 3u);
  EXPECT_EQ(st.bundles, 3u);
  EXPECT_EQ(st.compiles, 1u);

  // Holding the artifact: the repeated bundle is answered digest-only, from memory.
  v1::SpecializeBundleRequest held = BundleRequest();
  auto* have = held.add_have();
  have->set_format(v1::FORMAT_LTOIR);
  have->set_key(first.artifact().key());
  have->set_digest(first.artifact().digest());
  v1::SpecializeResponse slim;
  ASSERT_TRUE(CallBundle(*stub, held, &slim).ok());
  EXPECT_TRUE(slim.artifact().bytes_omitted());
  EXPECT_TRUE(slim.artifact().ltoir().empty());
  EXPECT_EQ(slim.artifact().origin(), v1::ORIGIN_MEMORY);
  EXPECT_EQ(slim.artifact().key(), first.artifact().key());
  st = d.Stats();
  EXPECT_EQ(st.memo_hits, 3u);
  EXPECT_EQ(st.digest_only_replies, 1u);
}

}  // namespace
}  // namespace coopd_test
