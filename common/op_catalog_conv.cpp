// Shape inference and cost of the convolution-shaped ops of the op catalog: conv,
// conv_transpose, max_pool and avg_pool (see common/op_catalog.h for their contracts).
#include <string>
#include <utility>
#include <vector>

#include "common/op_catalog.h"
#include "common/op_catalog_internal.h"

namespace kb::op_detail {
namespace {

// ---- conv and conv_transpose ---------------------------------------------------------------

struct ConvConfig {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
};

Result<ConvConfig> read_conv_config(const OpCall& call, size_t spatial, bool transposed) {
  ConvConfig config;
  struct Field {
    std::string_view name;
    std::vector<int64_t>* out;
    int64_t min_value;
  };
  std::vector<Field> fields = {{"stride", &config.stride, 1},
                               {"padding", &config.padding, 0},
                               {"dilation", &config.dilation, 1}};
  if (transposed) fields.push_back({"output_padding", &config.output_padding, 0});
  for (const Field& field : fields) {
    KB_ASSIGN_OR_RETURN(*field.out,
                        spatial_list(call.ints(field.name), field.name, spatial, field.min_value));
  }
  if (!transposed) config.output_padding.assign(spatial, 0);
  KB_ASSIGN_OR_RETURN(int64_t groups, call.int_attr("groups"));
  if (groups < 1) return bad_attr("groups", "an integer >= 1", std::to_string(groups));
  config.groups = groups;
  return config;
}

// x (N, C, *S) with 1..3 spatial dims, weight of the same rank, and the optional bias (O).
Status check_conv_inputs(const OpCall& call, const std::string& weight_layout) {
  const Shape& x = call.inputs[0];
  if (x.size() < 3 || x.size() > 5) {
    return bad_input(call, 0, "(N, C, *S) with 1 to 3 spatial dims (rank 3 to 5)");
  }
  if (call.inputs[1].size() != x.size()) {
    return bad_input(
        call, 1,
        weight_layout + " of rank " + std::to_string(x.size()) + " like x " + shape_to_string(x));
  }
  return Status::ok();
}

Status check_bias(const OpCall& call, int64_t out_channels) {
  if (call.inputs.size() < 3) return Status::ok();
  if (call.inputs[2] == Shape{out_channels}) return Status::ok();
  return bad_input(call, 2, "a bias (O) with O = " + std::to_string(out_channels));
}

// Output size of one spatial dim of a convolution (gather form).
Result<int64_t> conv_out_size(int64_t in, int64_t kernel, const ConvConfig& c, size_t d) {
  const int64_t span = c.dilation[d] * (kernel - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  if (padded < span) {
    return invalid("spatial dim " + std::to_string(d) +
                   ": the kernel's extent (dilation*(K-1)+1 = " + std::to_string(span) +
                   ") is larger than the padded input (" + std::to_string(in) + " + 2*" +
                   std::to_string(c.padding[d]) + " = " + std::to_string(padded) +
                   "), so the output would be empty");
  }
  return (padded - span) / c.stride[d] + 1;
}

Result<int64_t> conv_transpose_out_size(int64_t in, int64_t kernel, const ConvConfig& c, size_t d) {
  const int64_t out_pad = c.output_padding[d];
  if (out_pad >= c.stride[d] && out_pad >= c.dilation[d]) {
    return bad_attr("output_padding",
                    "entry " + std::to_string(d) + " smaller than stride (" +
                        std::to_string(c.stride[d]) + ") or dilation (" +
                        std::to_string(c.dilation[d]) + "), as PyTorch requires",
                    list_to_string(c.output_padding));
  }
  const int64_t out =
      (in - 1) * c.stride[d] - 2 * c.padding[d] + c.dilation[d] * (kernel - 1) + out_pad + 1;
  if (out < 1) {
    return invalid("spatial dim " + std::to_string(d) +
                   ": output size (L-1)*stride - 2*padding + dilation*(K-1) + output_padding + 1"
                   " = " +
                   std::to_string(out) + " is not positive (L = " + std::to_string(in) +
                   ", K = " + std::to_string(kernel) + ")");
  }
  return out;
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// Pairs (i, t) of one spatial dim of a transposed conv whose tap lands inside the output:
// 0 <= i*stride - padding + t*dilation < out. The product over dims is the true MAC count.
int64_t valid_taps(int64_t in, int64_t kernel, int64_t out, const ConvConfig& c, size_t d) {
  int64_t count = 0;
  for (int64_t t = 0; t < kernel; ++t) {
    const int64_t offset = t * c.dilation[d] - c.padding[d];  // position of tap t for i = 0
    const int64_t first = std::max<int64_t>(0, -floor_div(offset, c.stride[d]));
    const int64_t last = std::min(in - 1, floor_div(out - 1 - offset, c.stride[d]));
    count += std::max<int64_t>(0, last - first + 1);
  }
  return count;
}

}  // namespace

Result<OpOutput> infer_conv(const OpCall& call) {
  if (Status s = check_conv_inputs(call, "a weight (O, C/groups, *K)"); !s.is_ok()) return s;
  const Shape& x = call.inputs[0];
  const Shape& w = call.inputs[1];
  const size_t spatial = x.size() - 2;
  KB_ASSIGN_OR_RETURN(ConvConfig config, read_conv_config(call, spatial, /*transposed=*/false));
  const int64_t groups = config.groups;
  if (Status s = check_groups_divide(x[1], "x's channel count C", groups); !s.is_ok()) return s;
  if (Status s = check_groups_divide(w[0], "weight's out channels O", groups); !s.is_ok()) return s;
  if (w[1] != x[1] / groups) {
    return bad_input(call, 1,
                     "a weight (O, C/groups, *K) with C/groups = " + std::to_string(x[1]) + "/" +
                         std::to_string(groups) + " = " + std::to_string(x[1] / groups));
  }
  if (Status s = check_bias(call, w[0]); !s.is_ok()) return s;
  Shape out = {x[0], w[0]};
  double kernel_volume = 1;
  for (size_t d = 0; d < spatial; ++d) {
    KB_ASSIGN_OR_RETURN(int64_t size, conv_out_size(x[d + 2], w[d + 2], config, d));
    out.push_back(size);
    kernel_volume *= static_cast<double>(w[d + 2]);
  }
  double flops = 2.0 * numel(out) * static_cast<double>(w[1]) * kernel_volume;
  if (call.inputs.size() == 3) flops += kCostCheap * numel(out);
  return OpOutput{out, flops};
}

Result<OpOutput> infer_conv_transpose(const OpCall& call) {
  if (Status s = check_conv_inputs(call, "a weight (C, O/groups, *K)"); !s.is_ok()) return s;
  const Shape& x = call.inputs[0];
  const Shape& w = call.inputs[1];
  const size_t spatial = x.size() - 2;
  KB_ASSIGN_OR_RETURN(ConvConfig config, read_conv_config(call, spatial, /*transposed=*/true));
  const int64_t groups = config.groups;
  if (w[0] != x[1]) {
    return bad_input(call, 1,
                     "a weight (C, O/groups, *K) with C = " + std::to_string(x[1]) + " from x " +
                         shape_to_string(x));
  }
  if (Status s = check_groups_divide(x[1], "x's channel count C", groups); !s.is_ok()) return s;
  const int64_t out_channels = w[1] * groups;
  if (Status s = check_bias(call, out_channels); !s.is_ok()) return s;
  Shape out = {x[0], out_channels};
  double taps = 1;
  for (size_t d = 0; d < spatial; ++d) {
    KB_ASSIGN_OR_RETURN(int64_t size, conv_transpose_out_size(x[d + 2], w[d + 2], config, d));
    out.push_back(size);
    taps *= static_cast<double>(valid_taps(x[d + 2], w[d + 2], size, config, d));
  }
  // MACs = N * C * (O/groups) * valid taps: each input element meets O/groups output channels.
  double flops = 2.0 * static_cast<double>(x[0] * x[1] * w[1]) * taps;
  if (call.inputs.size() == 3) flops += kCostCheap * numel(out);
  return OpOutput{out, flops};
}


namespace {

// kernel_size, stride and padding as a ConvConfig with dilation 1, so that the output size
// follows the conv rule; padding must be at most half the window (PyTorch's rule).
Result<ConvConfig> read_pool_config(const OpCall& call, const std::vector<int64_t>& kernel) {
  const size_t spatial = kernel.size();
  ConvConfig config;
  KB_ASSIGN_OR_RETURN(auto stride, spatial_list(call.ints("stride"), "stride", spatial, 1));
  KB_ASSIGN_OR_RETURN(auto padding,
                      spatial_list(call.ints_or("padding", std::vector<int64_t>(spatial, 0)),
                                   "padding", spatial, 0));
  for (size_t d = 0; d < spatial; ++d) {
    if (2 * padding[d] > kernel[d]) {
      return bad_attr("padding",
                      "at most half of kernel_size " + list_to_string(kernel) + " (PyTorch's rule)",
                      list_to_string(padding));
    }
  }
  config.stride = std::move(stride);
  config.padding = std::move(padding);
  config.dilation.assign(spatial, 1);
  config.output_padding.assign(spatial, 0);
  return config;
}

}  // namespace

Result<OpOutput> infer_pool(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.size() < 3 || x.size() > 5) {
    return bad_input(call, 0, "(N, C, *S) with 1 to 3 spatial dims (rank 3 to 5)");
  }
  const size_t spatial = x.size() - 2;
  KB_ASSIGN_OR_RETURN(auto kernel,
                      spatial_list(call.ints("kernel_size"), "kernel_size", spatial, 1));
  KB_ASSIGN_OR_RETURN(ConvConfig config, read_pool_config(call, kernel));
  Shape out = {x[0], x[1]};
  double kernel_volume = 1;
  for (size_t d = 0; d < spatial; ++d) {
    KB_ASSIGN_OR_RETURN(int64_t size, conv_out_size(x[d + 2], kernel[d], config, d));
    out.push_back(size);
    kernel_volume *= static_cast<double>(kernel[d]);
  }
  return elementwise(out, kernel_volume);
}


Status check_groups_divide(int64_t channels, const char* what, int64_t groups) {
  if (channels % groups == 0) return Status::ok();
  return invalid(std::string(what) + " = " + std::to_string(channels) +
                 " is not divisible by groups = " + std::to_string(groups));
}

}  // namespace kb::op_detail
