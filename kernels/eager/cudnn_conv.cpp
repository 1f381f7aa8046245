// CudnnConv: PyTorch's cuDNN convolution path (aten/src/ATen/native/cudnn/Conv_v7.cpp) for one
// conv or conv_transpose graph node, with torch.backends.cudnn.benchmark = False and
// allow_tf32 = False:
//   - descriptors: contiguous NCHW / NCDHW fp32; 1-D layers get a height of 1 inserted at dim 2
//     (PyTorch's view1d_as_2d: stride 1, padding 0, dilation 1 on that axis);
//   - CUDNN_CROSS_CORRELATION, the group count on the descriptor, CUDNN_FMA_MATH;
//   - the algorithm: cudnnGetConvolution{Forward,BackwardData}Algorithm_v7's list in order, the
//     first entry with status success (and FMA math, which PyTorch asserts) whose workspace
//     cudaMalloc can give;
//   - a transposed conv is the data gradient of the conv that maps the output (dx) to the input
//     (dy), with the weight (C_in, C_out/groups, *K) as that conv's filter; output_padding only
//     enlarges dx, and cuDNN computes the extra rows like any other;
//   - tensors over INT_MAX elements are run in batch chunks, as split_batch_dim_to_32bit_out does.
#include "kernels/eager/cudnn_conv.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/eager/eager_ops.h"
#include "kernels/eager/library_handles.h"

namespace kb {
namespace {

// PyTorch's max_worksize for the batch split (elements per chunk, roughly).
constexpr int64_t kForwardMaxWorksize = int64_t{1024} * 1024 * 256;
constexpr int64_t kTransposedMaxWorksize = int64_t{1024} * 1024 * 128;
// PyTorch treats a larger workspace request as out of memory (cuDNN sometimes reports ~2^63).
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 40;

// The layer as cuDNN sees it: x (N, C, *S), w (filter), y (N, O, *S_out), 2 or 3 spatial dims.
// For a transposed conv x is cuDNN's dy and y its dx.
struct ConvGeometry {
  bool transposed = false;
  Shape x, w, y;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

std::string list_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const ConvGeometry& g) {
  return std::string(g.transposed ? "conv_transpose" : "conv") + " x " + shape_to_string(g.x) +
         ", weight " + shape_to_string(g.w) + ", y " + shape_to_string(g.y) + ", stride " +
         list_to_string(g.stride) + ", padding " + list_to_string(g.padding) + ", dilation " +
         list_to_string(g.dilation) + ", groups " + std::to_string(g.groups);
}

Result<ConvGeometry> read_geometry(const ProblemInstance& p, const std::string& node_name) {
  const GraphNode* node = p.spec().find_node(node_name);
  if (node == nullptr) return Status::not_found("CudnnConv: no graph node '" + node_name + "'");
  if (node->op != "conv" && node->op != "conv_transpose") {
    return Status::invalid_argument("CudnnConv: node '" + node_name + "' is a " + node->op +
                                    ", not a conv or conv_transpose");
  }
  ConvGeometry g;
  g.transposed = node->op == "conv_transpose";
  g.x = p.shape_of(node->inputs[0]);
  g.w = p.shape_of(node->inputs[1]);
  g.y = p.shape_of(node->output);
  g.stride = p.ints(node_name, "stride");
  g.padding = p.ints(node_name, "padding");
  g.dilation = p.ints(node_name, "dilation");
  g.groups = p.int_attr(node_name, "groups");
  const size_t rank = g.x.size();
  if (rank < 3 || rank > 5 || g.w.size() != rank || g.y.size() != rank ||
      g.stride.size() != rank - 2 || g.padding.size() != rank - 2 ||
      g.dilation.size() != rank - 2) {
    return Status::invalid_argument("CudnnConv: node '" + node_name + "': " + describe(g) +
                                    ": expected 1 to 3 spatial dims, one attribute entry each");
  }
  return g;
}

// PyTorch's view1d_as_2d: (N, C, L) -> (N, C, 1, L) and the matching unit axis in the params.
void promote_1d(ConvGeometry& g) {
  if (g.x.size() != 3) return;
  for (Shape* s : {&g.x, &g.w, &g.y}) s->insert(s->begin() + 2, 1);
  g.stride.insert(g.stride.begin(), 1);
  g.padding.insert(g.padding.begin(), 0);
  g.dilation.insert(g.dilation.begin(), 1);
}

// The batch chunk PyTorch runs cuDNN on: the whole batch while both tensors fit int indexing.
Result<int64_t> chunk_batch(const ConvGeometry& g) {
  const int64_t nx = element_count(g.x), ny = element_count(g.y), batch = g.x[0];
  if (nx <= INT_MAX && ny <= INT_MAX) return batch;
  const int64_t max_inner = std::max(nx, ny) / batch;
  const int64_t max_worksize = g.transposed ? kTransposedMaxWorksize : kForwardMaxWorksize;
  const int64_t split = std::max<int64_t>(max_worksize / max_inner, 1);
  if (split * max_inner >= INT_MAX) {
    return Status::failed_precondition("CudnnConv: " + describe(g) +
                                       ": one sample has more than INT_MAX elements, which "
                                       "PyTorch does not dispatch to cuDNN");
  }
  return std::min(split, batch);
}

// Contiguous (row-major) dims and strides as cuDNN's ints.
Result<std::vector<int>> to_ints(const Shape& shape, const std::string& what) {
  std::vector<int> out;
  for (int64_t v : shape) {
    if (v < 0 || v > INT_MAX) return Status::invalid_argument("CudnnConv: " + what + " too large");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

Status set_tensor(cudnnTensorDescriptor_t desc, const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (size_t d = shape.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * shape[d + 1];
  Result<std::vector<int>> dims = to_ints(shape, "tensor " + shape_to_string(shape));
  Result<std::vector<int>> steps = to_ints(strides, "stride of " + shape_to_string(shape));
  if (!dims.is_ok()) return dims.status();
  if (!steps.is_ok()) return steps.status();
  KB_CUDNN_TRY(cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, static_cast<int>(shape.size()),
                                          dims.value().data(), steps.value().data()));
  return Status::ok();
}

Status set_filter(cudnnFilterDescriptor_t desc, const Shape& shape) {
  Result<std::vector<int>> dims = to_ints(shape, "weight " + shape_to_string(shape));
  if (!dims.is_ok()) return dims.status();
  KB_CUDNN_TRY(cudnnSetFilterNdDescriptor(desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                          static_cast<int>(shape.size()), dims.value().data()));
  return Status::ok();
}

Status set_convolution(cudnnConvolutionDescriptor_t desc, const ConvGeometry& g) {
  Result<std::vector<int>> pad = to_ints(g.padding, "padding");
  Result<std::vector<int>> stride = to_ints(g.stride, "stride");
  Result<std::vector<int>> dilation = to_ints(g.dilation, "dilation");
  if (!pad.is_ok() || !stride.is_ok() || !dilation.is_ok())
    return Status::invalid_argument("CudnnConv: " + describe(g) + ": parameters out of range");
  KB_CUDNN_TRY(cudnnSetConvolutionNdDescriptor(
      desc, static_cast<int>(g.stride.size()), pad.value().data(), stride.value().data(),
      dilation.value().data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  KB_CUDNN_TRY(cudnnSetConvolutionGroupCount(desc, static_cast<int>(g.groups)));
  KB_CUDNN_TRY(cudnnSetConvolutionMathType(desc, CUDNN_FMA_MATH));  // no TF32
  return Status::ok();
}

Shape with_batch(Shape shape, int64_t batch) {
  shape[0] = batch;
  return shape;
}

// One entry of cuDNN's heuristic list.
struct Candidate {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t memory = 0;
  // PyTorch skips failed entries and asserts FMA math when TF32 is off.
  bool usable() const { return status == CUDNN_STATUS_SUCCESS && math == CUDNN_FMA_MATH; }
};

// The descriptors the heuristics and the workspace queries need, in cuDNN's argument roles.
struct ConvDescriptors {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
};

template <typename Perf>
std::vector<Candidate> to_candidates(const std::vector<Perf>& perf, int returned) {
  std::vector<Candidate> out;
  for (int i = 0; i < returned; ++i)
    out.push_back(
        {static_cast<int>(perf[i].algo), perf[i].status, perf[i].mathType, perf[i].memory});
  return out;
}

// cuDNN's heuristic ranking (what PyTorch uses when cudnn.benchmark is False), best first.
Result<std::vector<Candidate>> heuristic_candidates(const ConvDescriptors& d, bool transposed) {
  int returned = 0;
  if (!transposed) {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    KB_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(
        d.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf.data()));
    return to_candidates(perf, returned);
  }
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  KB_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(d.handle, d.w, d.x, d.conv, d.y,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                           &returned, perf.data()));
  return to_candidates(perf, returned);
}

// "algo 1 (status 0, math 2, 1024 bytes), ..." for the message when nothing fits.
std::string describe(const std::vector<Candidate>& candidates) {
  std::string s;
  for (const Candidate& c : candidates) {
    s += (s.empty() ? "" : ", ") + std::string("algo ") + std::to_string(c.algo) + " (status " +
         std::to_string(c.status) + ", math " + std::to_string(c.math) + ", " +
         std::to_string(c.memory) + " bytes)";
  }
  return s.empty() ? "none" : s;
}

// The workspace `algo` needs with the descriptors as they are now.
Result<size_t> workspace_size(const ConvDescriptors& d, bool transposed, int algo) {
  size_t bytes = 0;
  if (!transposed) {
    KB_CUDNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(
        d.handle, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes));
  } else {
    KB_CUDNN_TRY(cudnnGetConvolutionBackwardDataWorkspaceSize(
        d.handle, d.w, d.x, d.conv, d.y, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes));
  }
  return bytes;
}

// cuDNN must agree that the descriptors form one convolution: for a transposed conv this fails
// when output_padding >= stride (allowed by PyTorch when smaller than the dilation), which makes
// dx larger than the conv of dy's size.
Status check_geometry(const ConvDescriptors& d, const ConvGeometry& g, int64_t chunk) {
  const Shape& expected = g.transposed ? g.x : g.y;
  std::vector<int> dims(expected.size());
  KB_CUDNN_TRY(cudnnGetConvolutionNdForwardOutputDim(d.conv, g.transposed ? d.y : d.x, d.w,
                                                     static_cast<int>(dims.size()), dims.data()));
  const Shape got(dims.begin(), dims.end());
  if (got == with_batch(expected, chunk)) return Status::ok();
  return Status::failed_precondition(
      "CudnnConv: " + describe(g) + ": cuDNN's convolution of these sizes gives " +
      shape_to_string(got) + ", not " + shape_to_string(with_batch(expected, chunk)));
}

// Algorithm names by enum value (the arrays follow cuDNN's enum order).
constexpr const char* kForwardAlgos[] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
    "WINOGRAD",      "WINOGRAD_NONFUSED"};
constexpr const char* kBackwardDataAlgos[] = {"0",          "1",        "FFT",
                                              "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
static_assert(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM == 1 &&
                  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7 &&
                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8,
              "kForwardAlgos must follow cudnnConvolutionFwdAlgo_t");
static_assert(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT == 2 &&
                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED == 5 &&
                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6,
              "kBackwardDataAlgos must follow cudnnConvolutionBwdDataAlgo_t");

std::string algo_name(bool transposed, int algo) {
  const std::string prefix =
      transposed ? "CUDNN_CONVOLUTION_BWD_DATA_ALGO_" : "CUDNN_CONVOLUTION_FWD_ALGO_";
  const int count =
      static_cast<int>(transposed ? std::size(kBackwardDataAlgos) : std::size(kForwardAlgos));
  if (algo < 0 || algo >= count) return prefix + std::to_string(algo);
  return prefix + (transposed ? kBackwardDataAlgos : kForwardAlgos)[algo];
}

// Cleanup in the destructor cannot return a Status: report and go on, like KB_CUDA_WARN.
// The dims and strides a tensor descriptor holds.
struct TensorLayout {
  int rank = 0;
  int dims[CUDNN_DIM_MAX] = {};
  int strides[CUDNN_DIM_MAX] = {};
};

Result<TensorLayout> layout_of(cudnnTensorDescriptor_t desc) {
  TensorLayout t;
  cudnnDataType_t type{};
  KB_CUDNN_TRY(cudnnGetTensorNdDescriptor(desc, CUDNN_DIM_MAX, &type, &t.rank, t.dims, t.strides));
  return t;
}

Status set_batch(cudnnTensorDescriptor_t desc, TensorLayout t, int batch) {
  t.dims[0] = batch;
  KB_CUDNN_TRY(cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, t.rank, t.dims, t.strides));
  return Status::ok();
}

// The workspace `algo` needs for a chunk of `batch` samples; the descriptors are restored after.
Result<size_t> workspace_for_batch(const ConvDescriptors& d, bool transposed, int algo, int batch) {
  Result<TensorLayout> x = layout_of(d.x);
  Result<TensorLayout> y = layout_of(d.y);
  if (!x.is_ok()) return x.status();
  if (!y.is_ok()) return y.status();
  KB_TRY(set_batch(d.x, x.value(), batch));
  KB_TRY(set_batch(d.y, y.value(), batch));
  Result<size_t> bytes = workspace_size(d, transposed, algo);
  KB_TRY(set_batch(d.x, x.value(), x.value().dims[0]));
  KB_TRY(set_batch(d.y, y.value(), y.value().dims[0]));
  return bytes;
}

// The bytes `c` needs: what the heuristic reported (PyTorch allocates exactly that), raised to
// what the workspace query says for the full chunk and for the last, smaller chunk (which reuses
// the algorithm). Fails when cuDNN cannot size the workspace: the algorithm would fail to run.
Result<size_t> candidate_bytes(const ConvDescriptors& d, const ConvGeometry& g, int64_t chunk,
                               const Candidate& c) {
  Result<size_t> full = workspace_size(d, g.transposed, c.algo);
  if (!full.is_ok()) return full.status();
  size_t bytes = std::max(c.memory, full.value());
  const int64_t rest = g.x[0] % chunk;
  if (rest != 0) {
    Result<size_t> last = workspace_for_batch(d, g.transposed, c.algo, static_cast<int>(rest));
    if (!last.is_ok()) return last.status();
    bytes = std::max(bytes, last.value());
  }
  return bytes;
}

struct AlgorithmChoice {
  int algo = 0;
  size_t bytes = 0;
  void* workspace = nullptr;
};

// PyTorch's AlgoIterator::try_all without benchmarking: the heuristic's accepted entries in
// order, skipping those whose workspace allocation runs out of memory.
Result<AlgorithmChoice> choose_algorithm(const ConvDescriptors& d, const ConvGeometry& g,
                                         int64_t chunk) {
  Result<std::vector<Candidate>> candidates = heuristic_candidates(d, g.transposed);
  if (!candidates.is_ok()) return candidates.status();
  for (const Candidate& c : candidates.value()) {
    if (!c.usable()) continue;
    Result<size_t> bytes = candidate_bytes(d, g, chunk, c);
    if (!bytes.is_ok() || bytes.value() >= kMaxWorkspaceBytes) continue;
    AlgorithmChoice choice{c.algo, bytes.value(), nullptr};
    if (choice.bytes == 0) return choice;
    const cudaError_t err = cudaMalloc(&choice.workspace, choice.bytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clears the failed allocation, as PyTorch does; try the next
      continue;
    }
    Status s = cuda_status(err, "cudaMalloc(&choice.workspace, choice.bytes)", __FILE__, __LINE__);
    if (!s.is_ok()) return s;
    return choice;
  }
  return Status::failed_precondition("CudnnConv: " + describe(g) +
                                     ": no cuDNN algorithm with FMA math and a workspace that "
                                     "fits in memory; the heuristic offered: " +
                                     describe(candidates.value()));
}

struct Workspace {
  void* data;
  size_t bytes;
};

// y = conv(x, w) for the chunk the descriptors describe (cuDNN: forward, or dx = backward data
// of dy = x for a transposed conv).
Status run_chunk(const ConvDescriptors& d, bool transposed, int algo, Workspace ws, const float* x,
                 const float* w, float* y) {
  const float one = 1.0f, zero = 0.0f;
  if (!transposed) {
    KB_CUDNN_TRY(cudnnConvolutionForward(d.handle, &one, d.x, x, d.w, w, d.conv,
                                         static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws.data,
                                         ws.bytes, &zero, d.y, y));
  } else {
    KB_CUDNN_TRY(cudnnConvolutionBackwardData(d.handle, &one, d.w, w, d.x, x, d.conv,
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
                                              ws.data, ws.bytes, &zero, d.y, y));
  }
  return Status::ok();
}

}  // namespace

CudnnConv::~CudnnConv() {
  if (x_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyTensorDescriptor(x_desc_));
  if (y_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyTensorDescriptor(y_desc_));
  if (w_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyFilterDescriptor(w_desc_));
  if (conv_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyConvolutionDescriptor(conv_desc_));
  if (workspace_ != nullptr) KB_CUDA_WARN(cudaFree(workspace_));
}

Status CudnnConv::setup(const ProblemInstance& problem, const std::string& node,
                        cudaStream_t stream) {
  if (x_desc_ != nullptr) return Status::failed_precondition("CudnnConv: setup() called twice");
  Result<ConvGeometry> read = read_geometry(problem, node);
  if (!read.is_ok()) return read.status();
  ConvGeometry g = read.value();
  transposed_ = g.transposed;
  out_channels_ = g.y[1];
  out_inner_ = element_count(g.y) / (g.y[0] * g.y[1]);
  out_numel_ = element_count(g.y);
  promote_1d(g);
  Result<int64_t> chunk = chunk_batch(g);
  if (!chunk.is_ok()) return chunk.status();

  Result<cudnnHandle_t> handle = cudnn_handle();
  if (!handle.is_ok()) return handle.status();
  KB_CUDNN_TRY(cudnnSetStream(handle.value(), stream));
  KB_CUDNN_TRY(cudnnCreateTensorDescriptor(&x_desc_));
  KB_CUDNN_TRY(cudnnCreateTensorDescriptor(&y_desc_));
  KB_CUDNN_TRY(cudnnCreateFilterDescriptor(&w_desc_));
  KB_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&conv_desc_));
  KB_TRY(set_tensor(x_desc_, with_batch(g.x, chunk.value())));
  KB_TRY(set_tensor(y_desc_, with_batch(g.y, chunk.value())));
  KB_TRY(set_filter(w_desc_, g.w));
  KB_TRY(set_convolution(conv_desc_, g));
  const ConvDescriptors d{handle.value(), x_desc_, y_desc_, w_desc_, conv_desc_};
  KB_TRY(check_geometry(d, g, chunk.value()));
  Result<AlgorithmChoice> choice = choose_algorithm(d, g, chunk.value());
  if (!choice.is_ok()) return choice.status();
  algo_ = choice.value().algo;
  workspace_ = choice.value().workspace;
  workspace_bytes_ = choice.value().bytes;
  return Status::ok();
}

Status CudnnConv::run(const float* x, const float* w, const float* bias, float* y,
                      cudaStream_t stream) {
  if (x_desc_ == nullptr) return Status::failed_precondition("CudnnConv: run() before setup()");
  Result<cudnnHandle_t> handle = cudnn_handle();
  if (!handle.is_ok()) return handle.status();
  KB_CUDNN_TRY(cudnnSetStream(handle.value(), stream));
  Result<TensorLayout> x_layout = layout_of(x_desc_);
  Result<TensorLayout> y_layout = layout_of(y_desc_);
  if (!x_layout.is_ok()) return x_layout.status();
  if (!y_layout.is_ok()) return y_layout.status();
  const int64_t chunk = x_layout.value().dims[0];
  const int64_t batch = out_numel_ / (out_channels_ * out_inner_);
  const int64_t x_sample = x_layout.value().strides[0], y_sample = out_channels_ * out_inner_;
  const ConvDescriptors d{handle.value(), x_desc_, y_desc_, w_desc_, conv_desc_};
  for (int64_t start = 0; start < batch; start += chunk) {
    const int64_t n = std::min(chunk, batch - start);
    // Only the last chunk of a split batch can be smaller; its descriptors are restored after.
    if (n != chunk) {
      KB_TRY(set_batch(x_desc_, x_layout.value(), static_cast<int>(n)));
      KB_TRY(set_batch(y_desc_, y_layout.value(), static_cast<int>(n)));
    }
    Status s = run_chunk(d, transposed_, algo_, {workspace_, workspace_bytes_},
                         x + start * x_sample, w, y + start * y_sample);
    if (n != chunk) {
      KB_TRY(set_batch(x_desc_, x_layout.value(), static_cast<int>(chunk)));
      KB_TRY(set_batch(y_desc_, y_layout.value(), static_cast<int>(chunk)));
    }
    KB_TRY(s);
  }
  if (bias == nullptr) return Status::ok();
  // PyTorch: output.add_(bias.reshape(1, O, 1, ...)), a broadcast add after the convolution.
  const DeviceTensor out{y, {batch, out_channels_, out_inner_}};
  const DeviceTensor b{const_cast<float*>(bias), {out_channels_, 1}};
  return eager::binary(eager::Binary::kAdd, out, b, out, stream);
}

std::string CudnnConv::algorithm_name() const {
  return algo_name(transposed_, algo_);
}

}  // namespace kb
