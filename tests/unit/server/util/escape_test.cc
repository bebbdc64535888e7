// Unit tests of server/util/escape.h: what errors quote and what log lines hold.
#include "server/util/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace coopd {
namespace {

TEST(Escape, KeepsPrintableTextAndWellFormedUtf8) {
  EXPECT_EQ(EscapeText("sm_90 float32"), "sm_90 float32");
  EXPECT_EQ(EscapeText("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(Escape, EscapesControlCharactersSoNoLineCanBeForged) {
  EXPECT_EQ(EscapeText("sm_90\n2026-12-01T00:00:00.000 error coopd: FAKE"),
            "sm_90\\n2026-12-01T00:00:00.000 error coopd: FAKE");
  EXPECT_EQ(EscapeText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeText("\r\t\x1b[31m\x7f"), "\\r\\t\\x1b[31m\\x7f");
  // C1 controls (NEL) and the Unicode line and paragraph separators.
  EXPECT_EQ(EscapeText("a\xC2\x85"
                       "b\xE2\x80\xA8"
                       "c\xE2\x80\xA9"),
            "a\\u0085b\\u2028c\\u2029");
}

TEST(Escape, EscapesEveryByteOfMalformedUtf8) {
  EXPECT_EQ(EscapeText("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(EscapeText("\xC3"), "\\xc3");                             // truncated sequence
  EXPECT_EQ(EscapeText("\xC0\xAF"), "\\xc0\\xaf");                    // overlong "/"
  EXPECT_EQ(EscapeText("\xED\xA0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(EscapeText("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(Escape, QuoteCharsOnlyWhenAsked) {
  EXPECT_EQ(EscapeText("a\"b\\c"), "a\"b\\c");
  EXPECT_EQ(EscapeText("a\"b\\c", true), "a\\\"b\\\\c");
}

TEST(Escape, QuoteValueKeepsShortValuesWhole) {
  EXPECT_EQ(QuoteValue("float8"), "\"float8\"");
  EXPECT_EQ(QuoteValue(""), "\"\"");
  EXPECT_EQ(QuoteValue("sm_90\n"), "\"sm_90\\n\"");
  EXPECT_EQ(QuoteValue(std::string(kMaxQuotedValueBytes, 'M')),
            "\"" + std::string(kMaxQuotedValueBytes, 'M') + "\"");
}

TEST(Escape, QuoteValueBoundsLongValuesAndGivesTheirLength) {
  EXPECT_EQ(QuoteValue(std::string(20000, 'M')),
            "\"" + std::string(kMaxQuotedValueBytes, 'M') + "\xE2\x80\xA6\" (20000 bytes)");
  EXPECT_EQ(QuoteValue("abcdefgh", 4), "\"abcd\xE2\x80\xA6\" (8 bytes)");
  // Never cut inside a character: "é" is two bytes, so 3 bytes of "aéé" keep "aé".
  EXPECT_EQ(QuoteValue("a\xC3\xA9\xC3\xA9", 4), "\"a\xC3\xA9\xE2\x80\xA6\" (5 bytes)");
  // The prefix counts bytes of the value, before escaping.
  EXPECT_EQ(QuoteValue("\n\n\n\n\n", 2), "\"\\n\\n\xE2\x80\xA6\" (5 bytes)");
}

TEST(Escape, LogSafeBoundsAndEscapes) {
  EXPECT_EQ(LogSafe("a\nb", 100), "a\\nb");
  EXPECT_EQ(LogSafe(std::string(10, 'x') + "\n", 4), "xxxx... (7 more bytes not logged)");
  const std::string huge(20 << 20, 'M');
  EXPECT_LT(LogSafe(huge, 16384).size(), 16500u);
}

}  // namespace
}  // namespace coopd
