// ShapeExpr: the integer arithmetic of a spec's shapes and int attributes (common/shape_expr.h).
#include "common/shape_expr.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace kb {
namespace {

const std::map<std::string, int64_t> kDims = {{"N", 4}, {"C_in", 12}, {"H", 7}, {"W2", 3}};

// The value of `text` at kDims; fails the test when it does not parse or evaluate.
int64_t value_of(const std::string& text) {
  SCOPED_TRACE(text);
  Result<ShapeExpr> e = ShapeExpr::parse(text);
  KB_EXPECT_OK(e);
  if (!e.is_ok()) return INT64_MIN;
  Result<int64_t> v = e->evaluate(kDims);
  KB_EXPECT_OK(v);
  return v.is_ok() ? v.value() : INT64_MIN;
}

std::string parse_error(const std::string& text) {
  Result<ShapeExpr> e = ShapeExpr::parse(text);
  EXPECT_FALSE(e.is_ok()) << "'" << text << "' parsed";
  return e.is_ok() ? "" : e.status().message();
}

TEST(ShapeExpr, EvaluatesIntegersAndDims) {
  EXPECT_EQ(value_of("3"), 3);
  EXPECT_EQ(value_of("C_in"), 12);
  EXPECT_EQ(value_of("W2"), 3);
  EXPECT_EQ(value_of("  N  "), 4);
}

TEST(ShapeExpr, ProductsBindTighterThanSums) {
  EXPECT_EQ(value_of("1 + 2 * 3"), 7);
  EXPECT_EQ(value_of("N + C_in / 4"), 7);
  EXPECT_EQ(value_of("H * W2 - 1"), 20);
  EXPECT_EQ(value_of("C_in - N - 2"), 6);  // left-associative
  EXPECT_EQ(value_of("C_in / 2 / 3"), 2);  // (12 / 2) / 3, not 12 / (2 / 3)
}

TEST(ShapeExpr, ParenthesesOverridePrecedence) {
  EXPECT_EQ(value_of("(1 + 2) * 3"), 9);
  EXPECT_EQ(value_of("C_in / (N - 1)"), 4);
  EXPECT_EQ(value_of("((H))"), 7);
  EXPECT_EQ(value_of("2*(H+1)-(N)"), 12);
}

TEST(ShapeExpr, UnaryMinusNegatesAFactor) {
  EXPECT_EQ(value_of("-1"), -1);
  EXPECT_EQ(value_of("- N"), -4);
  EXPECT_EQ(value_of("-2 * 3"), -6);
  EXPECT_EQ(value_of("2 * -3"), -6);
  EXPECT_EQ(value_of("H - -1"), 8);
  EXPECT_EQ(value_of("-(N + 1)"), -5);
  EXPECT_EQ(value_of("--2"), 2);
}

TEST(ShapeExpr, DivisionMustBeExact) {
  Result<ShapeExpr> e = ShapeExpr::parse("C_in / 5");
  KB_ASSERT_OK(e);
  Result<int64_t> v = e->evaluate(kDims);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().message(), "shape expression 'C_in / 5': 12 is not divisible by 5");
}

TEST(ShapeExpr, DivisionByZeroIsAnError) {
  Result<ShapeExpr> e = ShapeExpr::parse("N / (H - 7)");
  KB_ASSERT_OK(e);
  Result<int64_t> v = e->evaluate(kDims);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().message(), "shape expression 'N / (H - 7)': 4 is not divisible by 0");
}

TEST(ShapeExpr, UnknownSymbolIsNamedAtEvaluation) {
  Result<ShapeExpr> e = ShapeExpr::parse("N * C_out");
  KB_ASSERT_OK(e);  // the loader checks symbols against dims, not the parser
  Result<int64_t> v = e->evaluate(kDims);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().message(), "shape expression 'N * C_out' uses unknown dim 'C_out'");
}

TEST(ShapeExpr, ParseErrorsSayWhatWasExpectedAndTheColumn) {
  EXPECT_EQ(
      parse_error("C_in +"),
      "bad shape expression 'C_in +': expected an integer, a dim name, '-' or '(' at column 7");
  EXPECT_EQ(parse_error(""),
            "bad shape expression '': expected an integer, a dim name, '-' or '(' at column 1");
  EXPECT_EQ(parse_error("(N + 1"), "bad shape expression '(N + 1': expected ')' at column 7");
  EXPECT_EQ(parse_error("N C"),
            "bad shape expression 'N C': expected an operator or the end at column 3");
  EXPECT_EQ(
      parse_error("N + %"),
      "bad shape expression 'N + %': expected an integer, a dim name, '-' or '(' at column 5");
  EXPECT_EQ(parse_error("3)"),
            "bad shape expression '3)': expected an operator or the end at column 2");
  EXPECT_EQ(parse_error("1234567890123456"),
            "bad shape expression '1234567890123456': expected an integer of at most 15 digits at "
            "column 17");
}

TEST(ShapeExpr, SymbolsListsEveryDimOnce) {
  Result<ShapeExpr> e = ShapeExpr::parse("N * (C_in + N) / -W2 + 2");
  KB_ASSERT_OK(e);
  EXPECT_EQ(e->symbols(), (std::set<std::string>{"C_in", "N", "W2"}));
  EXPECT_TRUE(ShapeExpr::parse("3 * 4")->symbols().empty());
}

TEST(ShapeExpr, KeepsItsTextAndConstantsPrintAsIntegers) {
  EXPECT_EQ(ShapeExpr::parse("C_in / 3")->text(), "C_in / 3");
  ShapeExpr c = ShapeExpr::constant(-5);
  EXPECT_EQ(c.text(), "-5");
  EXPECT_EQ(c.evaluate({}).value(), -5);
  EXPECT_TRUE(c.symbols().empty());
}

}  // namespace
}  // namespace kb
