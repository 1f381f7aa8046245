#include "common/shape_expr.h"

#include <cctype>
#include <vector>

namespace kb {

struct ShapeExpr::Node {
  char op = 0;  // 0: leaf; '+', '-', '*', '/'; 'n': negation of lhs (rhs is null)
  int64_t value = 0;
  std::string symbol;  // leaf: a dim name, or empty for a constant
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

using NodePtr = std::shared_ptr<const ShapeExpr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Result<NodePtr> parse_all() {
    Result<NodePtr> root = parse_sum();
    if (!root.is_ok()) return root;
    skip_space();
    if (pos_ != text_.size()) return error("an operator or the end");
    return root;
  }

 private:
  Result<NodePtr> parse_sum() {
    Result<NodePtr> lhs = parse_product();
    while (lhs.is_ok()) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) break;
      char op = text_[pos_++];
      Result<NodePtr> rhs = parse_product();
      if (!rhs.is_ok()) return rhs;
      lhs = binary(op, lhs.value(), rhs.value());
    }
    return lhs;
  }

  Result<NodePtr> parse_product() {
    Result<NodePtr> lhs = parse_factor();
    while (lhs.is_ok()) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/')) break;
      char op = text_[pos_++];
      Result<NodePtr> rhs = parse_factor();
      if (!rhs.is_ok()) return rhs;
      lhs = binary(op, lhs.value(), rhs.value());
    }
    return lhs;
  }

  Result<NodePtr> parse_factor() {
    skip_space();
    if (pos_ >= text_.size()) return error("an integer, a dim name, '-' or '('");
    char c = text_[pos_];
    if (c == '-') {
      ++pos_;
      Result<NodePtr> operand = parse_factor();
      if (!operand.is_ok()) return operand;
      return binary('n', operand.value(), nullptr);
    }
    if (c == '(') {
      ++pos_;
      Result<NodePtr> inner = parse_sum();
      if (!inner.is_ok()) return inner;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ')') return error("')'");
      ++pos_;
      return inner;
    }
    auto leaf = std::make_shared<ShapeExpr::Node>();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ - start > 15) return error("an integer of at most 15 digits");
      leaf->value = std::stoll(text_.substr(start, pos_ - start));
      return NodePtr(leaf);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      leaf->symbol = text_.substr(start, pos_ - start);
      return NodePtr(leaf);
    }
    return error("an integer, a dim name, '-' or '('");
  }

  static NodePtr binary(char op, NodePtr lhs, NodePtr rhs) {
    auto node = std::make_shared<ShapeExpr::Node>();
    node->op = op;
    node->lhs = std::move(lhs);
    node->rhs = std::move(rhs);
    return node;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  Status error(const std::string& expected) const {
    return Status::invalid_argument("bad shape expression '" + text_ + "': expected " + expected +
                                    " at column " + std::to_string(pos_ + 1));
  }

  const std::string& text_;
  size_t pos_ = 0;
};

Result<int64_t> evaluate_node(const ShapeExpr::Node& node, const std::map<std::string, int64_t>& dims,
                              const std::string& text) {
  if (node.op == 0) {
    if (node.symbol.empty()) return node.value;
    auto it = dims.find(node.symbol);
    if (it == dims.end()) {
      return Status::invalid_argument("shape expression '" + text + "' uses unknown dim '" +
                                      node.symbol + "'");
    }
    return it->second;
  }
  Result<int64_t> lhs = evaluate_node(*node.lhs, dims, text);
  if (!lhs.is_ok()) return lhs;
  if (node.op == 'n') return -lhs.value();
  Result<int64_t> rhs = evaluate_node(*node.rhs, dims, text);
  if (!rhs.is_ok()) return rhs;
  int64_t a = lhs.value(), b = rhs.value();
  switch (node.op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    default:
      if (b == 0 || a % b != 0) {
        return Status::invalid_argument("shape expression '" + text + "': " + std::to_string(a) +
                                        " is not divisible by " + std::to_string(b));
      }
      return a / b;
  }
}

void collect_symbols(const ShapeExpr::Node& node, std::set<std::string>& out) {
  if (node.op == 0) {
    if (!node.symbol.empty()) out.insert(node.symbol);
    return;
  }
  collect_symbols(*node.lhs, out);
  if (node.rhs) collect_symbols(*node.rhs, out);
}

}  // namespace

Result<ShapeExpr> ShapeExpr::parse(const std::string& text) {
  Parser parser(text);
  KB_ASSIGN_OR_RETURN(NodePtr root, parser.parse_all());
  ShapeExpr expr;
  expr.root_ = std::move(root);
  expr.text_ = text;
  return expr;
}

ShapeExpr ShapeExpr::constant(int64_t value) {
  auto leaf = std::make_shared<Node>();
  leaf->value = value;
  ShapeExpr expr;
  expr.root_ = leaf;
  expr.text_ = std::to_string(value);
  return expr;
}

Result<int64_t> ShapeExpr::evaluate(const std::map<std::string, int64_t>& dims) const {
  return evaluate_node(*root_, dims, text_);
}

std::set<std::string> ShapeExpr::symbols() const {
  std::set<std::string> out;
  collect_symbols(*root_, out);
  return out;
}

}  // namespace kb
