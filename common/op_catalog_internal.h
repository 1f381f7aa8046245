// Internals shared by the op catalog's translation units (op_catalog.cpp: the table, elementwise,
// norm, reduction, layout and attention ops; op_catalog_conv.cpp: conv, conv_transpose and
// pooling). Not part of the catalog's interface (common/op_catalog.h).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/op_catalog.h"

namespace kb::op_detail {

constexpr int kCostCheap = 1;  // FLOPs per element of add/mul/relu/...; see op_catalog.cpp

Status invalid(std::string message);
std::string list_to_string(const std::vector<int64_t>& values);
std::string input_label(const OpCall& call, size_t index);
// "in[1] (conv.weight): expected <expected>, got (64, 3, 3)"
Status bad_input(const OpCall& call, size_t index, const std::string& expected);
Status bad_attr(std::string_view attr, const std::string& expected, const std::string& got);
double numel(const Shape& shape);
OpOutput elementwise(const Shape& shape, double cost);
// An int-list attribute with one entry per spatial dim, each >= min_value.
Result<std::vector<int64_t>> spatial_list(Result<std::vector<int64_t>> values, std::string_view attr,
                                          size_t spatial, int64_t min_value);

// `channels` (named `what` in the message) must be divisible by `groups` (>= 1).
Status check_groups_divide(int64_t channels, const char* what, int64_t groups);

Result<OpOutput> infer_conv(const OpCall& call);
Result<OpOutput> infer_conv_transpose(const OpCall& call);
Result<OpOutput> infer_pool(const OpCall& call);

}  // namespace kb::op_detail
