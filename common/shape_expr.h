// Shape expressions: the integer arithmetic allowed in a spec's shapes and int attributes.
//
//   expr   := term (('+' | '-') term)*
//   term   := factor (('*' | '/') factor)*
//   factor := '-' factor | INTEGER | DIM_NAME | '(' expr ')'
//
// Unary minus lets an int attribute count from the end (softmax `dim: -1`); a shape that comes
// out negative is still rejected where shapes are resolved (every size must be >= 1).
//
// '/' is exact division: evaluating a quotient that leaves a remainder is an error (a channel
// count that groups do not divide is a bad shape, not something to round away).
//
// Thread safety: immutable after parse; evaluate() may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/status.h"

namespace kb {

class ShapeExpr {
 public:
  // Parses `text`; the error message says what was expected and where.
  static Result<ShapeExpr> parse(const std::string& text);
  static ShapeExpr constant(int64_t value);

  Result<int64_t> evaluate(const std::map<std::string, int64_t>& dims) const;
  // The dim names the expression uses.
  std::set<std::string> symbols() const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

}  // namespace kb
