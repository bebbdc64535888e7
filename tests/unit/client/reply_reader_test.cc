// client/src/reply_reader.cc: a SpecializeResponse read from gRPC's slices must come out as
// protobuf's own parse of the same bytes would, however the bytes are split, and every
// malformed prefix must be refused exactly when protobuf refuses it. Plus coop::Bytes and the
// buffer pool the split-LTO-IR path fills. And client/src/proto_convert.cc's conversions of what
// a CCCL choice touches: Spec::cccl both ways, the toolchain's CCCL name, the CCCL lists.
#include "reply_reader.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpc/grpc.h>
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "proto_convert.h"

namespace coop::internal {
namespace {

namespace v1 = coop::v1;

std::string Noise(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

// A reply with every kind of field the reader must pass through: strings, repeated messages,
// nested bytes (bitcode, link inputs), doubles, enums, bools, and the large LTO-IR.
v1::SpecializeResponse Sample(size_t ltoir_bytes) {
  v1::SpecializeResponse r;
  v1::Artifact* a = r.mutable_artifact();
  a->set_key(std::string(64, 'k'));
  a->set_ltoir(Noise(ltoir_bytes, 1));
  auto* e = a->add_entries();
  e->set_symbol("coop_block_reduce_sum");
  e->set_declaration("extern \"C\" __device__ float coop_block_reduce_sum(float, void*);");
  a->mutable_temp_storage()->set_bytes(1056);
  a->mutable_temp_storage()->set_align(16);
  a->set_arch("sm_90");
  a->mutable_spec()->set_family("block_reduce");
  a->mutable_spec()->mutable_block()->set_x(256);
  a->set_compile_ms(212.5);
  a->set_source(std::string(3000, 's'));  // a string field: UTF-8
  a->set_origin(v1::ORIGIN_MEMORY);
  a->add_parts()->mutable_temp_storage()->set_bytes(1056);
  auto* in = a->add_link_inputs();
  in->set_symbol("user_op");
  in->set_ltoir(Noise(5000, 3));
  a->mutable_bitcode()->set_data(Noise(7000, 4));
  a->add_formats(v1::FORMAT_LTOIR);
  a->set_digest(std::string(64, 'd'));
  a->set_layout_ms(3.25);
  return r;
}

// `bytes` cut into slices at `cuts` (increasing offsets).
std::vector<grpc::Slice> Cut(const std::string& bytes, const std::vector<size_t>& cuts) {
  std::vector<grpc::Slice> out;
  size_t at = 0;
  for (size_t c : cuts) {
    out.emplace_back(bytes.data() + at, c - at);
    at = c;
  }
  out.emplace_back(bytes.data() + at, bytes.size() - at);
  return out;
}

std::vector<size_t> Every(size_t step, size_t size) {
  std::vector<size_t> cuts;
  for (size_t c = step; c < size; c += step) cuts.push_back(c);
  return cuts;
}

// What protobuf makes of `bytes`, the LTO-IR taken out.
bool ProtobufReads(const std::string& bytes, v1::Artifact* artifact, std::string* ltoir) {
  v1::SpecializeResponse r;
  if (!r.ParseFromString(bytes)) return false;
  *ltoir = r.artifact().ltoir();
  *artifact = r.artifact();
  artifact->clear_ltoir();
  return true;
}

void ExpectSameAsProtobuf(const std::string& bytes, const std::vector<grpc::Slice>& slices,
                          const std::string& what) {
  v1::Artifact want;
  std::string want_ltoir;
  ASSERT_TRUE(ProtobufReads(bytes, &want, &want_ltoir)) << what;
  auto pool = std::make_shared<BufferPool>();
  Reply got;
  std::string error;
  ASSERT_TRUE(ReadReply(slices, pool.get(), &got, &error)) << what << ": " << error;
  EXPECT_EQ(got.ltoir, want_ltoir) << what;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got.artifact, want))
      << what << "\ngot:  " << got.artifact.ShortDebugString().substr(0, 400)
      << "\nwant: " << want.ShortDebugString().substr(0, 400);
}

class ReplyReader : public ::testing::Test {
 protected:
  // Slices created outside a gRPC call need the library.
  static void SetUpTestSuite() { grpc_init(); }
  static void TearDownTestSuite() { grpc_shutdown(); }
};

TEST_F(ReplyReader, ReadsAsProtobufDoesHoweverTheBytesAreSplit) {
  const std::string bytes = Sample(135156).SerializeAsString();
  ExpectSameAsProtobuf(bytes, Cut(bytes, {}), "one slice");
  for (size_t step : {1u, 2u, 7u, 8192u, 16384u, 65536u}) {
    ExpectSameAsProtobuf(bytes, Cut(bytes, Every(step, bytes.size())),
                         "slices of " + std::to_string(step));
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<size_t> cuts;
    for (size_t at = 0;;) {
      at += 1 + rng() % 20000;
      if (at >= bytes.size()) break;
      cuts.push_back(at);
    }
    // Empty slices in between are legal too.
    if (!cuts.empty()) cuts.insert(cuts.begin() + static_cast<long>(rng() % cuts.size()), cuts[0]);
    std::sort(cuts.begin(), cuts.end());
    ExpectSameAsProtobuf(bytes, Cut(bytes, cuts), "random cut " + std::to_string(trial));
  }
}

TEST_F(ReplyReader, MergesRepeatedArtifactsAndSkipsUnknownFieldsAsProtobufDoes) {
  // Two artifacts in one message merge: the second's scalars and LTO-IR win, repeated fields
  // append. Unknown fields of every wire type at the top and inside the artifact are passed
  // over (inside: kept by protobuf as unknown fields; both sides must agree).
  v1::SpecializeResponse a = Sample(1000), b;
  b.mutable_artifact()->set_ltoir("second");
  b.mutable_artifact()->add_entries()->set_symbol("second_entry");
  b.mutable_artifact()->set_compile_ms(1.0);
  std::string bytes = a.SerializeAsString() + b.SerializeAsString();
  bytes += std::string("\x28\x05", 2);                       // field 5, varint
  bytes += std::string("\x31", 1) + std::string(8, '\x01');  // field 6, fixed64
  bytes += std::string("\x3d", 1) + std::string(4, '\x02');  // field 7, fixed32
  bytes += std::string("\x42\x03xyz", 5);                    // field 8, bytes
  ExpectSameAsProtobuf(bytes, Cut(bytes, Every(3, bytes.size())), "merged");
  v1::Artifact want;
  std::string ltoir;
  ASSERT_TRUE(ProtobufReads(bytes, &want, &ltoir));
  EXPECT_EQ(ltoir, "second");
  EXPECT_EQ(want.entries_size(), 2);
}

TEST_F(ReplyReader, EveryPrefixIsRefusedExactlyWhenProtobufRefusesIt) {
  const std::string bytes = Sample(300).SerializeAsString();
  auto pool = std::make_shared<BufferPool>();
  int refused = 0;
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string prefix = bytes.substr(0, n);
    v1::Artifact want;
    std::string want_ltoir;
    const bool ok = ProtobufReads(prefix, &want, &want_ltoir);
    Reply got;
    std::string error;
    const bool read = ReadReply(Cut(prefix, Every(5, prefix.size())), pool.get(), &got, &error);
    ASSERT_EQ(read, ok) << "prefix of " << n << " bytes: " << error;
    if (!read) {
      ++refused;
      EXPECT_NE(error.find("malformed SpecializeResponse"), std::string::npos) << error;
    } else {
      EXPECT_EQ(got.ltoir, want_ltoir);
    }
  }
  EXPECT_GT(refused, static_cast<int>(bytes.size()) / 2);  // the check ran on broken input
}

TEST_F(ReplyReader, RefusesGroupsOverlongVarintsZeroTagsAndOverrunningFields) {
  auto pool = std::make_shared<BufferPool>();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {std::string("\x0b", 1), "wire type 3"},              // a group
      {std::string("\x0a\x02\x13\x00", 4), "wire type 3"},  // a group in the artifact
      {std::string("\x00", 1), "tag"},                      // tag zero
      {std::string("\x0a\x05\x12\x09"
                   "abc",
                   6),
       "past"},                                                   // ltoir past the artifact
      {std::string("\x0a\x7f", 2), "past the end"},               // artifact past the message
      {std::string("\x28") + std::string(11, '\xff'), "varint"},  // an 11-byte varint
  };
  for (const auto& [bytes, why] : bad) {
    Reply got;
    std::string error;
    EXPECT_FALSE(ReadReply(Cut(bytes, {}), pool.get(), &got, &error)) << why;
    EXPECT_NE(error.find(why), std::string::npos) << "want \"" << why << "\" in: " << error;
  }
}

TEST_F(ReplyReader, TakesTheSliceItselfWhenTheLtoirLiesInOneAndCopiesOtherwise) {
  const std::string bytes = Sample(135156).SerializeAsString();
  auto pool = std::make_shared<BufferPool>();
  Reply one;
  std::string error;
  LtoirSource source = LtoirSource::kNone;
  {
    std::vector<grpc::Slice> slices = Cut(bytes, {});
    ASSERT_TRUE(ReadReply(slices, pool.get(), &one, &error, &source)) << error;
    EXPECT_EQ(source, LtoirSource::kSlice);
    const char* begin = reinterpret_cast<const char*>(slices[0].begin());
    EXPECT_GE(one.ltoir.data(), begin);
    EXPECT_LE(one.ltoir.data() + one.ltoir.size(), begin + slices[0].size());
  }  // the slices are gone: the Bytes holds its own reference
  EXPECT_EQ(one.ltoir, Sample(135156).artifact().ltoir());

  // Split over slices: copied into a pooled buffer.
  Reply split;
  ASSERT_TRUE(
      ReadReply(Cut(bytes, Every(65536, bytes.size())), pool.get(), &split, &error, &source))
      << error;
  EXPECT_EQ(source, LtoirSource::kPooledCopy);
  EXPECT_EQ(split.ltoir, one.ltoir);

  // A small LTO-IR in a large slice is copied too, not left holding the whole slice.
  const std::string small = Sample(100).SerializeAsString() + std::string("\x42\x80\x80\x08", 4) +
                            std::string(1 << 17, 'p');  // an unknown 128 KiB field after it
  Reply little;
  ASSERT_TRUE(ReadReply(Cut(small, {}), pool.get(), &little, &error, &source)) << error;
  EXPECT_EQ(source, LtoirSource::kPooledCopy);
  EXPECT_EQ(little.ltoir, Sample(100).artifact().ltoir());

  // No LTO-IR (a bitcode-only reply): empty Bytes.
  v1::SpecializeResponse none = Sample(0);
  Reply empty;
  ASSERT_TRUE(ReadReply(Cut(none.SerializeAsString(), {}), pool.get(), &empty, &error, &source));
  EXPECT_EQ(source, LtoirSource::kNone);
  EXPECT_TRUE(empty.ltoir.empty());
}

TEST_F(ReplyReader, PooledBuffersComeBackWhenTheLastBytesGoes) {
  const std::string bytes = Sample(135156).SerializeAsString();
  const auto cuts = Every(65536, bytes.size());
  auto pool = std::make_shared<BufferPool>(/*max_free=*/2, /*max_keep=*/1 << 20);
  std::string error;
  for (int i = 0; i < 10; ++i) {
    Reply r;
    ASSERT_TRUE(ReadReply(Cut(bytes, cuts), pool.get(), &r, &error)) << error;
    Bytes copy = r.ltoir;  // a second reference: the buffer waits for both
    r.ltoir.clear();
    EXPECT_EQ(pool->idle(), 0u);
    EXPECT_EQ(copy.size(), 135156u);
  }
  EXPECT_EQ(pool->reused(), 9u);  // one buffer, allocated once, filled ten times
  EXPECT_EQ(pool->idle(), 1u);

  // At most max_free idle buffers; none over max_keep bytes.
  {
    std::vector<Reply> held(4);
    for (auto& r : held) ASSERT_TRUE(ReadReply(Cut(bytes, cuts), pool.get(), &r, &error));
  }
  EXPECT_EQ(pool->idle(), 2u);
  auto tight = std::make_shared<BufferPool>(4, /*max_keep=*/1000);
  {
    Reply r;
    ASSERT_TRUE(ReadReply(Cut(bytes, cuts), tight.get(), &r, &error));
  }
  EXPECT_EQ(tight->idle(), 0u);

  // A Bytes outlives its pool's owner.
  Reply late;
  ASSERT_TRUE(ReadReply(Cut(bytes, cuts), tight.get(), &late, &error));
  tight.reset();
  EXPECT_EQ(late.ltoir, Sample(135156).artifact().ltoir());
}

TEST(Bytes, ComparesCopiesAndPrintsLikeAStringWithoutCopyingTheBytes) {
  Bytes a(std::string("hello"));
  Bytes b = a;
  EXPECT_EQ(a.data(), b.data());  // shared, not copied
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, "hello");
  EXPECT_EQ(a, std::string("hello"));
  EXPECT_EQ(std::string_view("hello"), a);
  EXPECT_NE(a, "world");
  EXPECT_NE(a, Bytes("hell"));
  std::string s = a;  // a copy
  EXPECT_EQ(s, "hello");
  EXPECT_NE(static_cast<const void*>(s.data()), static_cast<const void*>(a.data()));
  EXPECT_EQ(a.str(), "hello");
  EXPECT_EQ(a.view().substr(1, 3), "ell");
  EXPECT_TRUE(Bytes().empty());
  EXPECT_TRUE(Bytes(std::string()).empty());
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(a, "hello");  // a still holds them
  std::ostringstream out;
  PrintTo(Bytes(std::string(40, '\x01')), &out);
  EXPECT_EQ(out.str(), "Bytes(40 bytes: 01010101010101010101010101010101...)");
}

TEST(ProtoConvert, SpecCcclGoesBothWaysAndEmptyStaysTheDaemonsDefault) {
  Spec s;
  s.family = "block_reduce";
  EXPECT_EQ(ToProto(s).cccl(), "");
  s.cccl = "3.5";
  const v1::PrimitiveSpec p = ToProto(s);
  EXPECT_EQ(p.cccl(), "3.5");
  EXPECT_EQ(FromProto(p).cccl, "3.5");
  EXPECT_FALSE(CheckFamilyOptions(s, "spec").has_value());  // not a family option

  v1::Toolchain t;
  t.set_cccl_version("3.5.0");
  t.set_cccl_name("cccl35");
  EXPECT_EQ(FromProto(t).cccl_name, "cccl35");
  EXPECT_EQ(FromProto(t).cccl_version, "3.5.0");
}

TEST(ProtoConvert, CatalogAndStatsCarryEveryCcclInTheDaemonsOrder) {
  auto fill = [](v1::CcclInfo* c, const std::string& name, const std::string& version,
                 bool is_default) {
    c->set_name(name);
    c->set_version(version);
    c->set_include("/opt/" + name + "/include");
    c->set_digest(std::string(64, name[0]));
    c->set_is_default(is_default);
    c->set_origin(is_default ? "CUDA toolkit" : "--cccl");
    c->set_probe(is_default ? "ok" : "failed");
    if (!is_default) c->add_unavailable("block_topk: error: no block_topk.cuh");
  };
  v1::CatalogResponse resp;
  resp.add_families()->set_name("block_reduce");
  fill(resp.add_cccls(), "toolkit", "3.3.0", true);
  fill(resp.add_cccls(), "cccl35", "3.5.0", false);
  resp.set_cccl("cccl35");
  const Catalog c = FromProto(resp);
  ASSERT_EQ(c.families.size(), 1u);
  EXPECT_EQ(c.families[0].name, "block_reduce");
  EXPECT_EQ(c.cccl, "cccl35");
  ASSERT_EQ(c.cccls.size(), 2u);
  EXPECT_EQ(c.cccls[0].name, "toolkit");
  EXPECT_TRUE(c.cccls[0].is_default);
  EXPECT_EQ(c.cccls[0].origin, "CUDA toolkit");
  EXPECT_EQ(c.cccls[0].probe, "ok");
  EXPECT_TRUE(c.cccls[0].unavailable.empty());
  EXPECT_EQ(c.cccls[1].name, "cccl35");
  EXPECT_EQ(c.cccls[1].version, "3.5.0");
  EXPECT_EQ(c.cccls[1].include, "/opt/cccl35/include");
  EXPECT_EQ(c.cccls[1].digest, std::string(64, 'c'));
  EXPECT_FALSE(c.cccls[1].is_default);
  EXPECT_EQ(c.cccls[1].probe, "failed");
  EXPECT_EQ(c.cccls[1].unavailable,
            std::vector<std::string>{"block_topk: error: no block_topk.cuh"});

  v1::Stats stats;
  *stats.mutable_cccls() = resp.cccls();
  stats.mutable_toolchain()->set_cccl_name("toolkit");
  const Stats s = FromProto(stats);
  ASSERT_EQ(s.cccls.size(), 2u);
  EXPECT_EQ(s.cccls[0].name, "toolkit");
  EXPECT_EQ(s.cccls[1].origin, "--cccl");
  EXPECT_EQ(s.toolchain.cccl_name, "toolkit");
}

}  // namespace
}  // namespace coop::internal
