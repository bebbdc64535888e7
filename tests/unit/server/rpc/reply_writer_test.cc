// The zero-copy reply (server/rpc/reply_writer.h) against protobuf's own serialization: the
// bytes must parse to the very message the normal path sends, field by field.
#include "server/rpc/reply_writer.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/support/slice.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"

namespace coopd {
namespace {

using coop::v1::Artifact;
using coop::v1::SpecializeResponse;

std::string Flatten(const grpc::ByteBuffer& wire) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(wire.Dump(&slices).ok());
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The checker: `wire` decodes as a SpecializeResponse equal to `expected` in every field.
testing::AssertionResult DecodesTo(const std::string& wire, const SpecializeResponse& expected) {
  SpecializeResponse got;
  if (!got.ParseFromString(wire)) {
    return testing::AssertionFailure() << "the " << wire.size() << " bytes do not decode";
  }
  std::string report;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&report);
  if (!differ.Compare(expected, got)) {
    return testing::AssertionFailure() << "decoded reply differs: " << report.substr(0, 2000);
  }
  return testing::AssertionSuccess();
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// An artifact with every kind of field set, as a hit serves it (less its large bytes).
Artifact Metadata(int parts) {
  Artifact a;
  a.set_key(std::string(64, 'a'));
  a.set_arch("sm_90");
  a.mutable_toolchain()->set_nvrtc_version("13.0");
  a.set_compile_ms(265.5);
  a.set_compile_log("warning: something\n");
  a.set_source("#include <cub/block/block_reduce.cuh>\n// rendered\n");
  a.set_origin(coop::v1::ORIGIN_MEMORY);
  a.set_pch_status("used");
  a.set_layout_ms(1.25);
  a.set_digest(std::string(64, 'd'));
  a.add_formats(coop::v1::FORMAT_LTOIR);
  for (int i = 0; i < parts; ++i) {
    auto* part = a.add_parts();
    part->mutable_spec()->set_family("block_reduce");
    part->mutable_spec()->set_dtype(i % 2 ? "int32" : "float32");
    part->mutable_temp_storage()->set_bytes(96 + i);
    auto* entry = part->add_entries();
    entry->set_symbol("coop_reduce_" + std::to_string(i));
    *a.add_entries() = *entry;
  }
  if (parts == 1) {
    *a.mutable_spec() = a.parts(0).spec();
    *a.mutable_temp_storage() = a.parts(0).temp_storage();
  }
  return a;
}

void AddBitcode(Artifact* a) {
  a->add_formats(coop::v1::FORMAT_BITCODE);
  auto* b = a->mutable_bitcode();
  b->set_key(std::string(64, 'b'));
  b->set_origin(coop::v1::ORIGIN_MEMORY);
  b->set_compile_ms(80);
  b->set_compile_log("clang: note\n");
  b->set_pch_status("used");
  b->set_digest(std::string(64, 'e'));
}

SharedBytes Share(const std::string& bytes) {
  auto owner = std::make_shared<const std::string>(bytes);
  return {owner, *owner};
}

// What the normal path sends: the artifact with its bytes in the message.
SpecializeResponse Whole(Artifact a, const std::string& ltoir, const std::string& bitcode) {
  if (!ltoir.empty()) a.set_ltoir(ltoir);
  if (!bitcode.empty()) a.mutable_bitcode()->set_data(bitcode);
  SpecializeResponse r;
  *r.mutable_artifact() = std::move(a);
  return r;
}

TEST(ReplyWriter, SingleLtoirArtifactDecodesAsTheSerializedOne) {
  const Artifact meta = Metadata(1);
  const std::string ltoir = RandomBytes(135 * 1024, 1);
  const std::string wire = Flatten(WriteSpecializeResponse(meta, Share(ltoir)));
  EXPECT_TRUE(DecodesTo(wire, Whole(meta, ltoir, "")));
  EXPECT_EQ(wire.size(), Whole(meta, ltoir, "").ByteSizeLong());
}

TEST(ReplyWriter, BitcodeAloneAndBothFormatsDecodeAsTheSerializedOnes) {
  Artifact bitcode_only = Metadata(1);
  bitcode_only.clear_formats();
  bitcode_only.clear_digest();
  AddBitcode(&bitcode_only);
  const std::string ltoir = RandomBytes(70000, 2), bitcode = RandomBytes(90000, 3);
  EXPECT_TRUE(DecodesTo(Flatten(WriteSpecializeResponse(bitcode_only, {}, Share(bitcode))),
                        Whole(bitcode_only, "", bitcode)));
  Artifact both = Metadata(1);
  AddBitcode(&both);
  const SpecializeResponse whole = Whole(both, ltoir, bitcode);
  const std::string wire = Flatten(WriteSpecializeResponse(both, Share(ltoir), Share(bitcode)));
  EXPECT_TRUE(DecodesTo(wire, whole));
  // The bitcode module occurs twice on the wire (its metadata, then its data): the parse merges
  // them; a message field replaced instead of merged would lose the key or the data.
  SpecializeResponse got;
  ASSERT_TRUE(got.ParseFromString(wire));
  EXPECT_EQ(got.artifact().bitcode().key(), both.bitcode().key());
  EXPECT_EQ(got.artifact().bitcode().data(), bitcode);
}

TEST(ReplyWriter, BundleWithLinkInputsDecodesAsTheSerializedOne) {
  Artifact bundle = Metadata(3);
  auto* in = bundle.add_link_inputs();
  in->set_symbol("coop_op_0123");
  in->set_key(std::string(64, 'c'));
  in->set_ltoir(RandomBytes(3000, 4));  // operators' bytes stay in the message
  bundle.set_type_definitions("struct pair { int a, b; };\n");
  const std::string ltoir = RandomBytes(400000, 5);
  EXPECT_TRUE(
      DecodesTo(Flatten(WriteSpecializeResponse(bundle, Share(ltoir))), Whole(bundle, ltoir, "")));
}

TEST(ReplyWriter, WithoutSharedBytesItIsTheNormalSerialization) {
  // A digest-only reply (and any reply without shared bytes) is exactly protobuf's bytes.
  Artifact digest_only = Metadata(1);
  AddBitcode(&digest_only);
  digest_only.clear_source();
  digest_only.clear_compile_log();
  digest_only.set_bytes_omitted(true);
  const SpecializeResponse whole = Whole(digest_only, "", "");
  const std::string wire = Flatten(WriteSpecializeResponse(digest_only));
  EXPECT_EQ(wire, whole.SerializeAsString());
  EXPECT_TRUE(DecodesTo(wire, whole));
  EXPECT_LT(wire.size(), 1024u);
}

TEST(ReplyWriter, EveryLengthEncodingDecodes) {
  // Varint lengths of 1 to 4 bytes, at and around each boundary, for both fields.
  for (size_t n : {size_t{1}, size_t{127}, size_t{128}, size_t{16383}, size_t{16384},
                   size_t{(1u << 21) - 1}, size_t{1u << 21}}) {
    Artifact a = Metadata(1);
    AddBitcode(&a);
    const std::string ltoir = RandomBytes(n, 6), bitcode = RandomBytes(n + 1, 7);
    EXPECT_TRUE(DecodesTo(Flatten(WriteSpecializeResponse(a, Share(ltoir), Share(bitcode))),
                          Whole(a, ltoir, bitcode)))
        << n << " bytes";
    EXPECT_TRUE(DecodesTo(Flatten(WriteSpecializeResponse(a, Share(ltoir))), Whole(a, ltoir, "")))
        << n << " bytes";
  }
}

TEST(ReplyWriter, TheBufferHoldsTheSharedBytesUntilItIsGone) {
  auto owner = std::make_shared<const std::string>(RandomBytes(5000, 8));
  std::weak_ptr<const std::string> watch = owner;
  const std::string copy = *owner;
  std::optional<grpc::ByteBuffer> wire;
  wire.emplace(WriteSpecializeResponse(Metadata(1), SharedBytes{owner, *owner}));
  owner.reset();
  ASSERT_FALSE(watch.expired());  // referenced, not copied
  EXPECT_TRUE(DecodesTo(Flatten(*wire), Whole(Metadata(1), copy, "")));
  wire.reset();
  EXPECT_TRUE(watch.expired());  // released with the last slice
}

TEST(ReplyWriter, TheCheckerCatchesAWrongLength) {
  // The checker's self-test: the same bytes with one length off by one must not pass.
  const Artifact meta = Metadata(1);
  const std::string ltoir = RandomBytes(20000, 9);
  const SpecializeResponse whole = Whole(meta, ltoir, "");
  const std::string good = Flatten(WriteSpecializeResponse(meta, Share(ltoir)));
  ASSERT_TRUE(DecodesTo(good, whole));
  // The response's artifact length: its varint starts at byte 1, low bits first.
  for (int delta : {-1, +1}) {
    std::string bad = good;
    bad[1] = static_cast<char>(bad[1] + delta);
    EXPECT_FALSE(DecodesTo(bad, whole)) << "artifact length " << delta;
  }
  // The LTO-IR's own length (the head's last varint, written just before the bytes).
  std::string head;
  AppendLengthDelimitedHeader(&head, Artifact::kLtoirFieldNumber, ltoir.size());
  const size_t at = good.size() - ltoir.size() - head.size();
  ASSERT_EQ(good.compare(at, head.size(), head), 0);
  std::string bad = good;
  bad[at + 1] = static_cast<char>(bad[at + 1] + 1);
  EXPECT_FALSE(DecodesTo(bad, whole)) << "ltoir length";
  EXPECT_FALSE(DecodesTo(good.substr(0, good.size() - 1), whole)) << "truncated";
}

TEST(ReplyWriter, TheHandWrittenFramingMatchesProtobufs) {
  // A field's header as the writer frames it is the header protobuf writes for it.
  for (size_t n : {size_t{0}, size_t{5}, size_t{300}, size_t{70000}}) {
    Artifact a;
    a.set_ltoir(std::string(n, 'x'));
    std::string header;
    AppendLengthDelimitedHeader(&header, Artifact::kLtoirFieldNumber, n);
    EXPECT_EQ(a.SerializeAsString(), n == 0 ? "" : header + std::string(n, 'x')) << n;
  }
  // SpecializeResponse has the one field the writer frames; a new one would be lost.
  EXPECT_EQ(SpecializeResponse::descriptor()->field_count(), 1);
}

}  // namespace
}  // namespace coopd
