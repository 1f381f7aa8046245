#!/usr/bin/env python3
"""Imports a KernelBench-style model file (`Model`, `get_inputs`, `get_init_inputs`) as a problem
spec (schemas/problem-spec.md).

What it writes, and where each part comes from:
  * dims: named like the file's module-level size globals (ints, or ints inside a tuple such as
    `input_shape = (4096,)`) that reach an input shape, or a parameter shape through a name that
    says it is a size (`out_channels`, `*_features`, ...); kernel sizes, strides, paddings,
    groups and heads stay constants of the graph.
  * presets: `full` is the file's own values; `small` and `odd` are proposed (every dim halved
    down to a floor of 8, batch 2; then batch 1 and odd sizes), each step kept only where the
    model still builds and runs at it.
  * inputs: get_inputs()'s shapes and generators (torch.rand, torch.randn, the softmax forms).
  * parameters: `named_parameters()` of `torch.manual_seed(42); Model(*get_init_inputs())` in
    creation order, by state_dict key, with PyTorch's default init of the layer that owns them.
  * graph: torch.fx's trace of forward(), every node mapped to a catalog op with the *effective*
    configuration read from the built layer (what the layer really received), not from the
    source text. Ops outside the catalog stop the import with an error naming them.
  * upstream: repository, path and commit of the file (never its source).

Shapes are expressions over the dims: the importer rebuilds the model with one dim changed at a
time (the source re-executed with that global overridden, shapes propagated on the meta device)
and fits every integer of the spec (shapes, reshape targets, int attributes) as a product of dims
and a constant. Nothing is allocated at full size but the parameters.

Needs python3-torch (Debian 12: PyTorch 1.13.1) and python3-yaml; run with /usr/bin/python3.

Usage:
  kernelbench_import.py FILE.py --id L1_019 --upstream-path KernelBench/level1/19_ReLU.py
                        --commit SHA [--out DIR]       writes DIR/L1_019_<name>.yaml (or stdout)
"""
import argparse
import ast
import contextlib
import copy
import dis
import io
import inspect
import operator
import os
import re
import sys
import types
from fractions import Fraction

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

UPSTREAM_REPO = "ScalingIntelligence/KernelBench"
# The small preset's output budget: its oracle fixtures are committed (float64, two cases).
SMALL_OUTPUT_ELEMENTS = 4096
torch.set_num_threads(1)  # shapes only: one thread is as fast and shares the machine


class ImportError_(Exception):
    """The file cannot be imported; the message says why (e.g. which ops are not in the catalog)."""


class UnsupportedOps(ImportError_):
    def __init__(self, ops):
        self.ops = sorted(set(ops))
        super().__init__("ops outside the catalog: " + ", ".join(self.ops))


# ---- the file's globals and their overrides ---------------------------------------------------

# Globals never taken as dims, whatever they reach: layer configuration.
_CONFIG_NAME = re.compile(r"kernel|stride|pad|dilation|group|head|eps|momentum|slope|scale|factor"
                          r"|value|^axis$|reduce|negative|min|max|prob|^p$|drop")
# Globals that are sizes even when they reach only parameters (out_channels, hidden sizes).
_SIZE_NAME = re.compile(r"channels|features|hidden|embed|size$|^dim$|^d_|_dim$|^num_classes$")
def _int_globals(module, tree):
    """{key: value} of the top-level int globals; a tuple of ints gives keys (name, index)."""
    found = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            names = [target] if isinstance(target, ast.Name) else (
                list(target.elts) if isinstance(target, ast.Tuple) else [])
            for t in names:
                if not isinstance(t, ast.Name):
                    continue
                value = module.get(t.id)
                if isinstance(value, bool):
                    continue
                if isinstance(value, int):
                    found[t.id] = value
                elif isinstance(value, tuple) and all(
                        isinstance(v, int) and not isinstance(v, bool) for v in value):
                    for i, v in enumerate(value):
                        found[(t.id, i)] = v
    return found


def _key_name(key):
    return key if isinstance(key, str) else f"{key[0]}{key[1]}"


def _overridden_source(tree, overrides):
    """The module with `NAME = value` inserted after each top-level assignment of an overridden
    global, so that globals derived later (`bias_shape = (out_channels, 1, 1)`) follow."""
    by_name = {}
    for key, value in overrides.items():
        name, index = (key, None) if isinstance(key, str) else key
        by_name.setdefault(name, []).append((index, value))
    body = []
    for stmt in tree.body:
        body.append(stmt)
        if not isinstance(stmt, ast.Assign):
            continue
        assigned = set()
        for target in stmt.targets:
            for t in ([target] if isinstance(target, ast.Name) else getattr(target, "elts", [])):
                if isinstance(t, ast.Name):
                    assigned.add(t.id)
        for name in sorted(assigned & set(by_name)):
            for index, value in by_name[name]:
                code = (f"{name} = {value!r}" if index is None else
                        f"{name} = {name}[:{index}] + ({value!r},) + {name}[{index + 1}:]")
                body.extend(ast.parse(code).body)
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))


def exec_module(source, path, overrides=None):
    tree = ast.parse(source, path)
    module = types.ModuleType("kernelbench_import_model")
    module.__dict__["__file__"] = path
    code = _overridden_source(tree, overrides or {})
    exec(compile(code, path, "exec"), module.__dict__)
    return module, tree


# ---- inputs --------------------------------------------------------------------------------

_CREATORS = ("rand", "randn", "zeros", "ones", "empty", "randint", "rand_like", "randn_like")


class _MetaInputs:
    """Makes torch's tensor creators allocate on the meta device while get_inputs() runs."""

    def __enter__(self):
        self.saved = {name: getattr(torch, name) for name in _CREATORS}
        for name, fn in self.saved.items():
            setattr(torch, name, self._meta(fn))
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(torch, name, fn)

    @staticmethod
    def _meta(fn):
        def make(*args, **kwargs):
            kwargs["device"] = "meta"
            return fn(*args, **kwargs)
        return make


class _MetaMaxPool:
    """torch 1.13 has no meta kernel for max_pool3d; without dilation its output shape is
    avg_pool3d's, which has one."""

    def __enter__(self):
        self.saved = F.max_pool3d

        def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                       return_indices=False):
            if x.is_meta and dilation in (1, (1, 1, 1)) and not return_indices:
                return F.avg_pool3d(x, kernel_size, stride, padding, ceil_mode)
            return self.saved(x, kernel_size, stride, padding, dilation, ceil_mode,
                              return_indices)
        F.max_pool3d = max_pool3d
        return self

    def __exit__(self, *exc):
        F.max_pool3d = self.saved


def _function_def(tree, name):
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    raise ImportError_(f"the file defines no {name}()")


def _generator_of(expr, assigned):
    """The spec generator of one get_inputs() element, from its expression."""
    text = ast.unparse(expr)
    if isinstance(expr, ast.Name) and expr.id in assigned:
        return _generator_of(assigned[expr.id], assigned)
    if re.fullmatch(r"torch\.rand\([^()]*\)", text):
        return "uniform"
    if re.fullmatch(r"torch\.randn\([^()]*\)", text):
        return "normal"
    if re.fullmatch(r"torch\.rand\([^()]*\)\.softmax\(dim=-1\)", text):
        return "softmax_uniform"
    m = re.fullmatch(r"\(torch\.rand\([^()]*\) \* (\w+)\)\.softmax\(dim=-1\)", text)
    if m and m.group(1) in assigned and ast.unparse(assigned[m.group(1)]) == "torch.rand(())":
        return "softmax_scaled_uniform"
    raise ImportError_(f"input generator not supported: {text}")


def input_generators(tree):
    fn = _function_def(tree, "get_inputs")
    assigned = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value
        if isinstance(stmt, ast.Return):
            if not isinstance(stmt.value, ast.List):
                raise ImportError_("get_inputs() must return a list literal")
            return [_generator_of(e, assigned) for e in stmt.value.elts]
    raise ImportError_("get_inputs() has no return")


# ---- parameters ----------------------------------------------------------------------------

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
          nn.ConvTranspose3d, nn.Linear)
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.GroupNorm, nn.LayerNorm,
          nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)


def _direct_parameter_inits(tree):
    """`self.NAME = nn.Parameter(torch.randn(...))` in class Model -> {NAME: init}."""
    models = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Model"]
    inits = {}
    for node in (n for m in models for n in ast.walk(m)):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Attribute) and isinstance(value, ast.Call)):
            continue
        if not ast.unparse(value.func).endswith("Parameter") or not value.args:
            continue
        creator = ast.unparse(value.args[0].func) if isinstance(value.args[0], ast.Call) else ""
        inits[target.attr] = {"torch.randn": "normal", "torch.ones": "ones",
                              "torch.zeros": "zeros"}.get(creator, "unknown:" + creator)
    return inits


def parameter_decls(model, tree, named_parameters):
    modules = dict(model.named_modules())
    direct = _direct_parameter_inits(tree)
    decls = []
    for key, tensor in named_parameters:
        owner_name, _, leaf = key.rpartition(".")
        owner = modules[owner_name]
        decl = {"name": key, "shape": list(tensor.shape)}
        parent = modules[owner_name.rpartition(".")[0]] if owner_name else None
        if isinstance(parent, nn.MultiheadAttention) and leaf == "bias":
            decl["init"] = "zeros"  # MultiheadAttention._reset_parameters zeroes out_proj.bias
        elif isinstance(owner, _CONVS):
            decl["init"] = "kaiming_uniform" if leaf == "weight" else "fan_in_uniform"
            if leaf == "bias":
                decl["fan_in_of"] = (owner_name + "." if owner_name else "") + "weight"
        elif isinstance(owner, _NORMS):
            decl["init"] = "ones" if leaf == "weight" else "zeros"
        elif isinstance(owner, nn.MultiheadAttention):
            decl["init"] = {"in_proj_weight": "xavier_uniform"}.get(leaf, "zeros")
        elif owner is model and leaf in direct:
            decl["init"] = direct[leaf]
        else:
            decl["init"] = "unknown"
        if decl["init"].startswith("unknown"):
            raise ImportError_(f"parameter {key}: its initialization is not one the spec knows "
                               f"({decl['init']})")
        decls.append(decl)
    return decls


# ---- the graph -----------------------------------------------------------------------------

def _proxy_iter(self):
    """`B, C, H, W = x.shape` under fx: torch 1.13 looks for UNPACK_SEQUENCE at the wrong
    bytecode index on Python 3.11; this finds it by offset."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
    raise torch.fx.proxy.TraceError("Proxy object cannot be iterated")


torch.fx.Proxy.__iter__ = _proxy_iter


class _CreationOrder:
    """Records the order in which nn.Parameters are created while the model is built (the
    spec lists parameters in that order: it is the order PyTorch draws their inits in)."""

    def __enter__(self):
        self.order = []
        self.saved = nn.Parameter.__new__
        saved, order = self.saved, self.order

        def new(cls, data=None, requires_grad=True):
            p = saved(cls, data, requires_grad)
            order.append(p)
            return p
        nn.Parameter.__new__ = staticmethod(new)
        return self

    def __exit__(self, *exc):
        nn.Parameter.__new__ = self.saved

    def sort(self, model):
        rank = {id(p): i for i, p in enumerate(self.order)}
        return sorted(model.named_parameters(), key=lambda kv: rank.get(id(kv[1]), len(rank)))


class _Tracer(torch.fx.Tracer):
    """torch.nn layers are leaves, and so is a user module named ChannelShuffle (its forward
    unpacks x.size(), which fx cannot trace; it is the catalog's channel_shuffle).
    `torch.tensor(0.0, device=x.device)` becomes a constant (the device is not traced)."""

    def trace(self, root, concrete_args=None):
        saved = torch.tensor

        def tensor(data, *args, **kwargs):
            if isinstance(kwargs.get("device"), torch.fx.Proxy):
                kwargs.pop("device")
            return saved(data, *args, **kwargs)
        torch.tensor = tensor
        try:
            return super().trace(root, concrete_args)
        finally:
            torch.tensor = saved

    def is_leaf_module(self, m, qualname):
        return type(m).__name__ == "ChannelShuffle" or super().is_leaf_module(m, qualname)


def _spatial(value, rank):
    return list(value) if isinstance(value, (tuple, list)) else [value] * rank


def _conv_attrs(m):
    rank = m.weight.dim() - 2
    if m.padding_mode != "zeros":
        raise UnsupportedOps([f"{type(m).__name__}(padding_mode={m.padding_mode})"])
    padding = m.padding
    if isinstance(padding, str):
        if padding != "valid":
            raise UnsupportedOps([f"{type(m).__name__}(padding='{padding}')"])
        padding = 0
    attrs = {"stride": _spatial(m.stride, rank), "padding": _spatial(padding, rank)}
    if isinstance(m, nn.modules.conv._ConvTransposeNd):
        attrs["output_padding"] = _spatial(m.output_padding, rank)
    attrs["dilation"] = _spatial(m.dilation, rank)
    attrs["groups"] = m.groups
    return attrs


def _pool_attrs(m, name, rank):
    if m.ceil_mode:
        raise UnsupportedOps([f"{name}(ceil_mode=True)"])
    if isinstance(m, (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)):
        if m.return_indices or any(d != 1 for d in _spatial(m.dilation, rank)):
            raise UnsupportedOps([f"{name}(dilation or return_indices)"])
    elif not m.count_include_pad or getattr(m, "divisor_override", None) is not None:
        raise UnsupportedOps([f"{name}(count_include_pad=False or divisor_override)"])
    stride = m.stride if m.stride is not None else m.kernel_size
    return {"kernel_size": _spatial(m.kernel_size, rank), "stride": _spatial(stride, rank),
            "padding": _spatial(m.padding, rank)}


_POOL_RANK = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3, nn.AvgPool1d: 1,
              nn.AvgPool2d: 2, nn.AvgPool3d: 3}


def _module_op(m, qualname):
    """(op, attrs, parameter keys) of a leaf module call; parameters follow x in `in`."""
    t = type(m)
    prefix = qualname + "."

    def keys(*names):
        return [prefix + n for n in names if getattr(m, n, None) is not None]

    if t is nn.Linear:
        return "linear", {}, keys("weight", "bias")
    if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        return "conv", _conv_attrs(m), keys("weight", "bias")
    if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        return "conv_transpose", _conv_attrs(m), keys("weight", "bias")
    simple = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.Hardswish: "hardswish",
              nn.SiLU: "swish"}
    if t in simple:
        return simple[t], {}, []
    if t is nn.GELU:
        if m.approximate != "none":
            raise UnsupportedOps([f"GELU(approximate='{m.approximate}')"])
        return "gelu", {}, []
    if t is nn.LeakyReLU:
        return "leaky_relu", {"negative_slope": float(m.negative_slope)}, []
    if t is nn.Hardtanh or t is nn.ReLU6:
        return "hardtanh", {"min_val": float(m.min_val), "max_val": float(m.max_val)}, []
    if t is nn.Softmax:
        return "softmax", {"dim": m.dim}, []
    if t in _POOL_RANK:
        op = "max_pool" if "Max" in t.__name__ else "avg_pool"
        return op, _pool_attrs(m, t.__name__, _POOL_RANK[t]), []
    if isinstance(m, nn.modules.batchnorm._BatchNorm):
        if not (m.affine and m.training):
            raise UnsupportedOps([f"{t.__name__}(affine=False or eval mode)"])
        return "batch_norm", {"eps": float(m.eps), "momentum": float(m.momentum),
                              "training": True}, keys("weight", "bias")
    if isinstance(m, nn.modules.instancenorm._InstanceNorm):
        if m.affine or m.track_running_stats:
            raise UnsupportedOps([f"{t.__name__}(affine or track_running_stats)"])
        return "instance_norm", {"eps": float(m.eps)}, []
    if t is nn.GroupNorm:
        if not m.affine:
            raise UnsupportedOps(["GroupNorm(affine=False)"])
        return "group_norm", {"num_groups": m.num_groups, "eps": float(m.eps)}, keys("weight",
                                                                                     "bias")
    if t is nn.LayerNorm:
        if not m.elementwise_affine:
            raise UnsupportedOps(["LayerNorm(elementwise_affine=False)"])
        return "layer_norm", {"eps": float(m.eps)}, keys("weight", "bias")
    if t.__name__ == "ChannelShuffle":
        return "channel_shuffle", {"groups": m.groups}, []
    if t is nn.MultiheadAttention:
        if m.batch_first or m.dropout != 0 or not m._qkv_same_embed_dim or m.bias_k is not None:
            raise UnsupportedOps(["MultiheadAttention(batch_first, dropout, kdim/vdim or "
                                  "add_bias_kv)"])
        return "multihead_attention", {"num_heads": m.num_heads}, [
            prefix + "in_proj_weight", prefix + "in_proj_bias", prefix + "out_proj.weight",
            prefix + "out_proj.bias"]
    if t is nn.Identity or (t is nn.Dropout and m.p == 0):
        return "identity", {}, []
    raise UnsupportedOps([t.__name__])


_FUNCTIONS = {
    torch.relu: "relu", F.relu: "relu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
    torch.tanh: "tanh", F.tanh: "tanh", F.hardswish: "hardswish", torch.log: "log",
    F.silu: "swish", torch.bmm: "bmm",
}
_METHODS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "log": "log"}


def _function_name(node):
    t = node.target
    if node.op == "call_method":
        return "Tensor." + t
    return getattr(t, "__module__", "") + "." + getattr(t, "__name__", str(t))


class GraphBuilder:
    """fx nodes -> catalog nodes. Every tensor-valued fx node becomes one catalog node (or an
    alias of its input: identity, contiguous, the first output of MultiheadAttention); int-valued
    nodes (x.size(0)) are dropped, since reshape targets come from the propagated shapes."""

    def __init__(self, gm, model, constants):
        self.gm = gm
        self.constants = constants
        self.modules = dict(model.named_modules())
        self.params = {k for k, _ in model.named_parameters()}
        self.tensor = {}  # fx node -> catalog tensor name
        self.consts = {}  # fx node -> python scalar (torch.tensor(c), attributes)
        self.nodes = []
        self.unsupported = []

    def build(self):
        for node in self.gm.graph.nodes:
            if any(isinstance(a, torch.fx.Node) and a.meta.get("tensor_meta") is not None
                   and a not in self.tensor and a not in self.consts
                   for a in node.all_input_nodes):
                continue  # downstream of an unsupported node: reported there
            try:
                self._visit(node)
            except UnsupportedOps as error:
                self.unsupported.extend(error.ops)
        if self.unsupported:
            raise UnsupportedOps(self.unsupported)
        if not hasattr(self, "output"):
            raise ImportError_("forward() does not return a tensor the graph computes")
        return self.nodes

    # helpers
    def _emit(self, node, op, inputs, attrs, name=None):
        out = node.name
        taken = {n["name"] for n in self.nodes}
        name = name if name and name not in taken else node.name  # fx's names are unique
        self.nodes.append({"name": name, "op": op, "in": inputs, "out": out, **attrs})
        self.tensor[node] = out

    def _arg_tensor(self, a):
        if isinstance(a, torch.fx.Node) and a in self.tensor:
            return self.tensor[a]
        return None

    def _scalar(self, a):
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return float(a)
        if isinstance(a, torch.fx.Node) and a in self.consts:
            return float(self.consts[a])
        return None

    def _shape(self, node):
        meta = node.meta.get("tensor_meta")
        return list(meta.shape) if meta is not None and hasattr(meta, "shape") else None

    def _is_tuple_of_tensors(self, node):
        meta = node.meta.get("tensor_meta")
        return meta is not None and not hasattr(meta, "shape")

    def _visit(self, node):
        if node.op == "placeholder":
            self.tensor[node] = node.target
        elif node.op == "get_attr":
            if node.target in self.params:
                self.tensor[node] = node.target
            else:
                if node.target in self.constants:
                    self.consts[node] = self.constants[node.target]
                else:
                    raise UnsupportedOps([f"buffer {node.target}"])
        elif node.op == "call_module":
            self._module(node)
        elif node.op in ("call_function", "call_method"):
            self._function(node)
        elif node.op == "output":
            result = node.args[0]
            if not (isinstance(result, torch.fx.Node) and result in self.tensor):
                raise UnsupportedOps(["forward() returning a non-tensor or a tuple"])
            self.output = self.tensor[result]

    def _module(self, node):
        m = self.modules[node.target]
        op, attrs, keys = _module_op(m, node.target)
        x = self._arg_tensor(node.args[0])
        if op == "identity":
            self.tensor[node] = x
            return
        if op == "multihead_attention":
            qkv = [self._arg_tensor(a) for a in node.args[:3]]
            if len(node.args) != 3 or node.kwargs:
                raise UnsupportedOps(["MultiheadAttention with masks or need_weights"])
            self._emit(node, op, qkv + keys, attrs, name=node.target)
            self.mha_outputs = getattr(self, "mha_outputs", set()) | {node}
            return
        self._emit(node, op, [x] + keys, attrs, name=node.target.replace(".", "_")
                   if op not in ("conv", "conv_transpose", "linear", "batch_norm", "group_norm",
                                 "layer_norm") else node.target)

    def _function(self, node):
        t = node.target
        args = list(node.args)
        kwargs = dict(node.kwargs)
        if t is operator.getitem and node.args[0] in getattr(self, "mha_outputs", set()):
            if args[1] != 0 and not node.users:
                return  # the attention weights, unused (`out, _ = self.attn(x, x, x)`)
            if args[1] != 0:
                raise UnsupportedOps(["MultiheadAttention attention weights"])
            self.tensor[node] = self.tensor[args[0]]
            return
        if self._is_tuple_of_tensors(node):  # torch.max(x, dim) -> (values, indices)
            raise UnsupportedOps([_function_name(node)])
        if self._shape(node) is None:  # an int or a tuple of ints: x.size(0), x.shape
            if t is torch.tensor and isinstance(args[0], (int, float)):
                self.consts[node] = args[0]
            return
        if node.op == "call_method" and t in ("contiguous", "clone"):
            self.tensor[node] = self._arg_tensor(args[0])
            return
        handler = self._handler(node)
        if handler is None:
            raise UnsupportedOps([_function_name(node)])
        handler(node, args, kwargs)

    def _handler(self, node):
        t = node.target
        if node.op == "call_function" and t in _FUNCTIONS:
            return self._unary_or_bmm
        if node.op == "call_method" and t in _METHODS:
            return self._unary_or_bmm
        table = {
            operator.add: self._add, operator.iadd: self._add, torch.add: self._add,
            operator.sub: self._sub, operator.isub: self._sub, torch.sub: self._sub,
            operator.mul: self._mul, operator.imul: self._mul, torch.mul: self._mul,
            operator.truediv: self._div, torch.div: self._div, operator.itruediv: self._div,
            torch.min: self._min, torch.clamp: self._clamp, F.gelu: self._gelu,
            F.leaky_relu: self._leaky_relu, F.hardtanh: self._hardtanh,
            torch.softmax: self._softmax, F.softmax: self._softmax, torch.mean: self._mean,
            F.kl_div: self._kl_div, torch.matmul: self._matmul, operator.matmul: self._matmul,
            torch.reshape: self._reshape, torch.flatten: self._reshape,
            torch.permute: self._permute, torch.transpose: self._transpose,
            F.linear: self._linear, torch.mm: self._matmul,
        }
        methods = {"add": self._add, "sub": self._sub, "mul": self._mul, "div": self._div,
                   "clamp": self._clamp, "softmax": self._softmax, "mean": self._mean,
                   "view": self._reshape, "reshape": self._reshape, "flatten": self._reshape,
                   "permute": self._permute, "transpose": self._transpose}
        if node.op == "call_method":
            return methods.get(node.target)
        return table.get(t)

    def _unary_or_bmm(self, node, args, kwargs):
        op = _FUNCTIONS.get(node.target) or _METHODS.get(node.target)
        if op == "bmm":
            return self._emit(node, "bmm", [self._arg_tensor(a) for a in args[:2]], {})
        kwargs.pop("inplace", None)  # F.relu(x, inplace=True) on a fresh tensor: same values
        if len(args) != 1 or kwargs:
            raise UnsupportedOps([_function_name(node) + " with extra arguments"])
        self._emit(node, op, [self._arg_tensor(args[0])], {})

    def _binary(self, node, a, b, tensor_op, scalar_op, scalar_map=lambda c: c, swap_ok=True):
        ta, tb = self._arg_tensor(a), self._arg_tensor(b)
        if ta and tb:
            if tensor_op is None:
                raise UnsupportedOps([_function_name(node) + " of two tensors"])
            return self._emit(node, tensor_op, [ta, tb], {})
        scalar, tensor = (self._scalar(b), ta) if ta else (self._scalar(a), tb)
        if tensor is None or scalar is None or (tb and not swap_ok):
            raise UnsupportedOps([_function_name(node) + " of these operands"])
        self._emit(node, scalar_op, [tensor], {"value": scalar_map(scalar)})

    def _add(self, node, args, kwargs):
        if kwargs:
            raise UnsupportedOps(["add with alpha"])
        self._binary(node, args[0], args[1], "add", "add_scalar")

    def _sub(self, node, args, kwargs):
        # x - c is x + (-c) exactly in IEEE arithmetic; c - x is not in the catalog.
        if kwargs:
            raise UnsupportedOps(["sub with alpha"])
        self._binary(node, args[0], args[1], "sub", "add_scalar", lambda c: -c, swap_ok=False)

    def _mul(self, node, args, kwargs):
        a, b = args
        # torch.sigmoid(x) * x (or x * torch.sigmoid(x)): the catalog's swish.
        for s, x in ((a, b), (b, a)):
            if (isinstance(s, torch.fx.Node) and s.target in (torch.sigmoid, F.sigmoid, "sigmoid")
                    and s.args[0] is x and len(s.users) == 1 and self.nodes
                    and self.nodes[-1]["out"] == self.tensor.get(s)):
                self.nodes.pop()
                return self._emit(node, "swish", [self._arg_tensor(x)], {})
        self._binary(node, a, b, "mul", "mul_scalar")

    def _div(self, node, args, kwargs):
        if kwargs.get("rounding_mode") is not None:
            raise UnsupportedOps(["div with rounding_mode"])
        self._binary(node, args[0], args[1], None, "div_scalar", swap_ok=False)

    def _min(self, node, args, kwargs):
        if len(args) != 2 or kwargs:
            raise UnsupportedOps(["torch.min reduction"])
        self._binary(node, args[0], args[1], None, "min_scalar")

    def _clamp(self, node, args, kwargs):
        lo = kwargs.get("min", args[1] if len(args) > 1 else None)
        hi = kwargs.get("max", args[2] if len(args) > 2 else None)
        if lo is None or hi is None:
            raise UnsupportedOps(["clamp with one bound"])
        # clamp(x, a, b) and hardtanh(x, a, b) are the same function, NaN included.
        self._emit(node, "hardtanh", [self._arg_tensor(args[0])],
                   {"min_val": float(lo), "max_val": float(hi)})

    def _gelu(self, node, args, kwargs):
        if kwargs.get("approximate", "none") != "none":
            raise UnsupportedOps(["gelu(approximate='tanh')"])
        self._emit(node, "gelu", [self._arg_tensor(args[0])], {})

    def _leaky_relu(self, node, args, kwargs):
        slope = kwargs.get("negative_slope", args[1] if len(args) > 1 else 0.01)
        self._emit(node, "leaky_relu", [self._arg_tensor(args[0])],
                   {"negative_slope": float(slope)})

    def _hardtanh(self, node, args, kwargs):
        lo = kwargs.get("min_val", args[1] if len(args) > 1 else -1.0)
        hi = kwargs.get("max_val", args[2] if len(args) > 2 else 1.0)
        self._emit(node, "hardtanh", [self._arg_tensor(args[0])],
                   {"min_val": float(lo), "max_val": float(hi)})

    def _softmax(self, node, args, kwargs):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if dim is None or kwargs.get("dtype") is not None:
            raise UnsupportedOps(["softmax without dim or with dtype"])
        self._emit(node, "softmax", [self._arg_tensor(args[0])], {"dim": dim})

    def _mean(self, node, args, kwargs):
        dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
        keepdim = kwargs.get("keepdim", args[2] if len(args) > 2 else False)
        if dims is None:
            raise UnsupportedOps(["mean over all elements"])
        dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
        rank = len(args[0].meta["tensor_meta"].shape)
        if sorted(d % rank for d in dims) != list(range(rank - len(dims), rank)):
            # the catalog takes it, the GPU reference (graph_nodes.cpp) does not
            raise UnsupportedOps(["mean over non-trailing dims (GPU reference)"])
        self._emit(node, "mean", [self._arg_tensor(args[0])],
                   {"dims": dims, "keepdim": bool(keepdim)})

    def _kl_div(self, node, args, kwargs):
        reduction = kwargs.get("reduction", "mean")
        if reduction != "batchmean" or kwargs.get("log_target", False):
            raise UnsupportedOps([f"kl_div(reduction='{reduction}')"])
        self._emit(node, "kl_div", [self._arg_tensor(a) for a in args[:2]],
                   {"reduction": "batchmean"})

    def _matmul(self, node, args, kwargs):
        shapes = [list(a.meta["tensor_meta"].shape) for a in args[:2]]
        a, b = (self._arg_tensor(x) for x in args[:2])
        if len(shapes[0]) == 3 and len(shapes[1]) == 3 and shapes[0][0] == shapes[1][0]:
            return self._emit(node, "bmm", [a, b], {})
        if len(shapes[0]) in (2, 3) and len(shapes[1]) == 2:
            # torch.matmul of (M, K) or (B, M, K) by (K, N) is one GEMM over the rows of a: a
            # batch-1 bmm over views (a reshape is a view in both backends).
            k, n = shapes[1]
            rows = 1
            for extent in shapes[0][:-1]:
                rows *= extent
            self.nodes.append({"name": node.name + "_a", "op": "reshape", "in": [a],
                               "out": node.name + "_a", "shape": [1, rows, k]})
            self.nodes.append({"name": node.name + "_b", "op": "reshape", "in": [b],
                               "out": node.name + "_b", "shape": [1, k, n]})
            self.nodes.append({"name": node.name + "_bmm", "op": "bmm",
                               "in": [node.name + "_a", node.name + "_b"],
                               "out": node.name + "_bmm"})
            return self._emit(node, "reshape", [node.name + "_bmm"], {"shape": self._shape(node)})
        raise UnsupportedOps([f"matmul of ranks {len(shapes[0])}x{len(shapes[1])}"])

    def _linear(self, node, args, kwargs):
        inputs = list(args) + [kwargs[k] for k in ("weight", "bias") if k in kwargs]
        tensors = [self._arg_tensor(a) for a in inputs if a is not None]
        if None in tensors:
            raise UnsupportedOps(["F.linear of non-parameter operands"])
        self._emit(node, "linear", tensors, {})

    def _reshape(self, node, args, kwargs):
        self._emit(node, "reshape", [self._arg_tensor(args[0])], {"shape": self._shape(node)})

    def _permute(self, node, args, kwargs):
        dims = args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kwargs["dims"])
        self._emit(node, "permute", [self._arg_tensor(args[0])], {"dims": list(dims)})

    def _transpose(self, node, args, kwargs):
        rank = len(self._shape(node))
        a, b = (d % rank for d in args[1:3])
        dims = list(range(rank))
        dims[a], dims[b] = dims[b], dims[a]
        self._emit(node, "permute", [self._arg_tensor(args[0])], {"dims": dims})


# ---- one concrete build of the file ----------------------------------------------------------

def build_concrete(source, path, overrides=None):
    """The spec's tensors and graph at the file's sizes with `overrides` applied, all integers
    concrete: {inputs, parameters, graph, output, module, model, init_inputs}."""
    module, tree = exec_module(source, path, overrides)
    ns = module.__dict__
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in ns:
            raise ImportError_(f"the file defines no {name}")
    init_inputs = ns["get_init_inputs"]()
    torch.manual_seed(42)
    with _CreationOrder() as creation:
        model = ns["Model"](*init_inputs)
    model.train()
    with _MetaInputs():
        inputs = ns["get_inputs"]()
    params = parameter_decls(model, tree, creation.sort(model))
    try:
        gm = torch.fx.GraphModule(model, _Tracer().trace(model))
    except Exception as error:  # fx raises many kinds; the message is what matters
        raise ImportError_(f"torch.fx cannot trace forward(): {type(error).__name__}: {error}")
    # Scalar constants (torch.tensor(0.0) in forward()) are read before the move to meta.
    constants = {n.target: getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"}
    constants = {k: v.item() for k, v in constants.items()
                 if isinstance(v, torch.Tensor) and v.dim() == 0}
    meta_model = gm.to("meta")
    try:
        with _MetaMaxPool():
            ShapeProp(meta_model).propagate(*inputs)
    except Exception as error:
        raise ImportError_(f"shape propagation failed: {type(error).__name__}: "
                           f"{str(error).splitlines()[0] if str(error) else ''}")
    for n in gm.graph.nodes:  # the meta kernels do not all refuse an empty output
        meta = n.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape") and any(d < 1 for d in meta.shape):
            raise ImportError_(f"node {n.name} has an empty output {list(meta.shape)}")
    if not all(isinstance(t, torch.Tensor) for t in inputs):
        raise UnsupportedOps(["get_inputs() returning a Python scalar"])
    placeholders = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise ImportError_(f"forward() takes {len(placeholders)} inputs, get_inputs() gives "
                           f"{len(inputs)}")
    builder = GraphBuilder(gm, model, constants)
    graph = builder.build()
    out_node = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    out_meta = out_node.meta.get("tensor_meta") if isinstance(out_node, torch.fx.Node) else None
    return {"inputs": [{"name": n, "shape": list(t.shape)} for n, t in zip(placeholders, inputs)],
            "output_elements": out_meta.shape.numel() if hasattr(out_meta, "shape") else 0,
            "parameters": params, "graph": graph, "output": builder.output, "module": ns,
            "tree": tree, "model": model, "init_inputs": init_inputs}


# ---- fitting integers as expressions over the dims ------------------------------------------

def _int_leaves(spec, path=()):
    """(path, value) of every integer in the fittable parts of a concrete spec."""
    if isinstance(spec, bool):
        return
    if isinstance(spec, int):
        yield path, spec
    elif isinstance(spec, list):
        for i, v in enumerate(spec):
            yield from _int_leaves(v, path + (i,))
    elif isinstance(spec, dict):
        for k, v in spec.items():
            if k in ("dims", "dim", "value", "keepdim"):  # dim indices, not sizes
                continue
            yield from _int_leaves(v, path + (k,))


def _structure(spec):
    """The spec with every fittable integer blanked: must not change between probes."""
    if isinstance(spec, bool):
        return spec
    if isinstance(spec, int):
        return "#"
    if isinstance(spec, list):
        return [_structure(v) for v in spec]
    if isinstance(spec, dict):
        return {k: (v if k in ("dims", "dim", "value", "keepdim") else _structure(v))
                for k, v in spec.items()}
    return spec


def _fittable(c):
    return {"inputs": c["inputs"], "parameters": c["parameters"], "graph": c["graph"]}


def _probe_values(v):
    return [v // 2, v * 2] if v % 2 == 0 and v >= 4 else [v * 2]


def _expression(value, full, probes, dim_names):
    """`value` at full size and at each one-dim probe -> an expression string (or int)."""
    factors = {}
    for key, (probe_dim_value, probe_val) in probes.items():
        if probe_val == value:
            continue
        ratio = Fraction(probe_val, value) if value else None
        dim_ratio = Fraction(probe_dim_value, full[key])
        if ratio == dim_ratio:
            factors[key] = 1
        elif ratio == 1 / dim_ratio:
            factors[key] = -1
        else:
            raise ImportError_(f"cannot express {value} as a product of dims (it changes by "
                               f"{ratio} when {_key_name(key)} changes by {dim_ratio})")
    if not factors:
        return value
    constant = Fraction(value)
    for key, power in factors.items():
        constant /= Fraction(full[key]) ** power
    num = [dim_names[k] for k, p in factors.items() if p == 1]
    den = [dim_names[k] for k, p in factors.items() if p == -1]
    text = " * ".join(([str(constant.numerator)] if constant.numerator != 1 else []) + num)
    if not num:
        text = str(constant.numerator)
    for d in den + ([str(constant.denominator)] if constant.denominator != 1 else []):
        text += " / " + d
    return text


def _set_path(spec, path, value):
    for p in path[:-1]:
        spec = spec[p]
    spec[path[-1]] = value


def _evaluate(text, values):
    if isinstance(text, int):
        return text
    return int(eval(text.replace("/", "//"), {"__builtins__": {}}, dict(values)))


# ---- the spec ------------------------------------------------------------------------------

class _NoInit:
    """Skips nn.init's draws while the model is built: the importer reads shapes and the layer
    configuration only, and drawing a (16384, 8192) weight again and again is what costs."""

    _NAMES = ("kaiming_uniform_", "kaiming_normal_", "uniform_", "normal_", "xavier_uniform_",
              "xavier_normal_", "zeros_", "ones_", "constant_", "trunc_normal_")

    def __enter__(self):
        self.saved = {n: getattr(nn.init, n) for n in self._NAMES}
        for n in self._NAMES:
            setattr(nn.init, n, lambda tensor, *args, **kwargs: tensor)
        return self

    def __exit__(self, *exc):
        for n, fn in self.saved.items():
            setattr(nn.init, n, fn)


def _dim_names(keys):
    """A dim is named like the file's global (`batch_size`, `in_channels`; `input_shape0` for
    element 0 of a tuple global), so that the oracle can set the globals from a preset."""
    return {key: _key_name(key) for key in keys}


def _is_batch(key):
    return _key_name(key) in ("batch_size", "batch", "bs")


class Importer:
    def __init__(self, source, path):
        self.source, self.path = source, path
        with _NoInit():  # the spec takes shapes and configuration from the model, never values
            self.base = build_concrete(source, path)
        self.candidates = _int_globals(self.base["module"], self.base["tree"])

    def _try(self, overrides):
        try:  # fx prints the failing node of a probe; a probe that breaks is an answer too
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(
                    io.StringIO()), _NoInit():
                return build_concrete(self.source, self.path, overrides)
        except Exception:  # noqa: BLE001 (whatever the model raises at these sizes)
            return None

    def find_dims(self):
        """{key: concrete spec with that global probed} for every global that is a dim."""
        base_inputs = [i["shape"] for i in self.base["inputs"]]
        base_params = [p["shape"] for p in self.base["parameters"]]
        probes = {}
        for key, value in self.candidates.items():
            name = _key_name(key) if isinstance(key, str) else key[0]
            if _CONFIG_NAME.search(name):
                continue
            probe = None
            for probe_value in _probe_values(value):  # halving may change the structure
                probe = self._try({key: probe_value})
                if probe is not None and _structure(_fittable(probe)) == _structure(
                        _fittable(self.base)):
                    break
                probe = None
            if probe is None:
                continue
            probe["probe_value"] = probe_value
            moves_inputs = [i["shape"] for i in probe["inputs"]] != base_inputs
            moves_params = [p["shape"] for p in probe["parameters"]] != base_params
            if moves_inputs or (moves_params and _SIZE_NAME.search(name)):
                probes[key] = probe
        return probes

    def fit(self, probes):
        full = {k: self.candidates[k] for k in probes}
        names = _dim_names(list(probes))
        self.expressions = {}  # path in the spec -> int or expression string
        spec = copy.deepcopy(_fittable(self.base))
        leaves = {p: v for p, v in _int_leaves(spec)}
        probe_leaves = {k: dict(_int_leaves(_fittable(c))) for k, c in probes.items()}
        for path, value in leaves.items():
            per_probe = {k: (probes[k]["probe_value"], probe_leaves[k][path]) for k in probes}
            self.expressions[path] = _expression(value, full, per_probe, names)
            _set_path(spec, path, self.expressions[path])
        return spec, {names[k]: full[k] for k in probes}, names

    def _output_elements(self, values, names):
        concrete = self._try({k: values[names[k]] for k in names})
        return concrete["output_elements"] if concrete else None

    def _valid_at(self, values, names):
        """The model runs at `values`, and the fitted spec gives the same integers there (a fit
        made at even sizes can miss a floor division at odd ones: such a step is refused)."""
        overrides = {k: values[names[k]] for k in names}
        concrete = self._try(overrides)
        if concrete is None:
            return False
        if _structure(_fittable(concrete)) != _structure(_fittable(self.base)):
            return False
        return all(_evaluate(self.expressions[path], values) == value
                   for path, value in _int_leaves(_fittable(concrete)))

    def propose_presets(self, full, names):
        """small: each dim halved while >= its floor and the model still builds; odd: batch 1
        and every other dim made odd (+1) where the model allows it."""
        keys = list(names)
        small = dict(full)
        for key in keys:
            floor = 2 if _is_batch(key) else 8
            while small[names[key]] // 2 >= floor:
                trial = dict(small, **{names[key]: small[names[key]] // 2})
                if not self._valid_at(trial, names):
                    break
                small = trial
        # Then smaller still, largest dim first, while the output is over the fixture budget.
        while (self._output_elements(small, names) or 0) > SMALL_OUTPUT_ELEMENTS:
            for key in sorted(keys, key=lambda k: -small[names[k]]):
                trial = dict(small, **{names[key]: small[names[key]] // 2})
                if small[names[key]] >= 4 and self._valid_at(trial, names):
                    small = trial
                    break
            else:
                break
        odd = dict(small)
        for key in keys:
            d = names[key]
            value = 1 if _is_batch(key) else (small[d] + 1 if small[d] % 2 == 0 else small[d])
            trial = dict(odd, **{d: value})
            if value != odd[d] and self._valid_at(trial, names):
                odd = trial
        return {"full": full, "small": small, "odd": odd}  # odd may equal small


def _family(level, ops):
    if level == 3:
        return "network"
    if "multihead_attention" in ops:
        return "attention"
    if "conv_transpose" in ops:
        return "conv_transpose"
    if "conv" in ops:
        return "conv"
    if "bmm" in ops or "matmul" in ops or "linear" in ops:
        return "matmul"
    if "kl_div" in ops:
        return "loss"
    return "activation"


def _notes(base, model, module_ns):
    sig = inspect.signature(type(model).__init__)
    try:
        bound = sig.bind(None, *base["init_inputs"])
        binding = ", ".join(f"{k}={v!r}" for k, v in list(bound.arguments.items())[1:])
    except TypeError as error:
        binding = f"(does not bind: {error})"
    layers = "; ".join(f"{name}: {m!r}" for name, m in model.named_modules()
                       if name and not list(m.children()))
    text = f"Imported by tools/kernelbench_import.py. get_init_inputs() binds: {binding or 'nothing'}."
    if layers:
        text += f" Effective layers: {layers}."
    return text


def import_problem(source, upstream_path, problem_id, commit, name=None,
                   max_small_output=None):
    """The spec of one file, as a dict in the order the YAML writes it. With max_small_output,
    a problem whose small preset keeps a larger output is refused (a suite's fixture budget)."""
    importer = Importer(source, upstream_path)
    probes = importer.find_dims()
    fitted, full, names = importer.fit(probes)
    presets = importer.propose_presets(full, names)
    elements = importer._output_elements(presets["small"], names)
    if max_small_output is not None and (elements is None or elements > max_small_output):
        raise ImportError_(f"no small preset: the output keeps {elements} elements (its sizes are "
                           "literals in the file, not globals)")
    base = importer.base
    level = int(problem_id[1])
    ops = [n["op"] for n in fitted["graph"]]
    generators = input_generators(base["tree"])
    inputs = [dict(i, generator=g) for i, g in zip(fitted["inputs"], generators)]
    stem = os.path.splitext(os.path.basename(upstream_path))[0]
    spec = {
        "id": problem_id,
        "name": name or stem.split("_", 1)[1],
        "level": level,
        "family": _family(level, ops),
        "init_inputs": _init_inputs_text(base["init_inputs"]),
        "notes": _notes(base, base["model"], base["module"]),
        "dims": list(full),
        "presets": presets,
        "inputs": inputs,
        "parameters": fitted["parameters"],
        "graph": fitted["graph"],
        "output": base["output"],
        "tolerance": {"atol": 1.0e-4, "rtol": 1.0e-4},
    }
    if any(g.startswith("softmax") for g in generators):
        spec["robustness"] = {"skip": ["shift", "scale", "centered"]}
    spec["upstream"] = {"repo": UPSTREAM_REPO, "commit": commit, "path": upstream_path}
    return spec


def _init_inputs_text(values):
    return "[" + ", ".join(repr(v) for v in values) + "]"


# ---- YAML ----------------------------------------------------------------------------------

def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        text = repr(v)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        if text in ("inf", "-inf", "nan"):
            return {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}[text]
        return text
    if isinstance(v, int):
        return str(v)
    text = str(v)
    if re.fullmatch(r"[A-Za-z_][\w.]*|[\w ./*+()-]+", text) and not re.fullmatch(
            r"(?i)true|false|yes|no|on|off|null|~", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _flow(v):
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return _scalar(v)


def to_yaml(spec, header):
    lines = [f"# {header}"] if header else []
    for key, value in spec.items():
        if key in ("notes",):
            lines.append(f"{key}: |")
            lines.extend("  " + line for line in _wrap(value, 98))
        elif key in ("inputs", "parameters", "graph"):
            lines.append(f"{key}:" if value else f"{key}: []")
            lines.extend(f"  - {_flow(item)}" for item in value)
        elif key == "presets":
            lines.append("presets:")
            lines.extend(f"  {name}: {_flow(dims)}" for name, dims in value.items())
        elif key == "init_inputs":
            lines.append(f"{key}: {_scalar(str(value)) if False else _quote(value)}")
        else:
            lines.append(f"{key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _wrap(text, width):
    words, lines, line = text.split(" "), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return lines + [line]


def slug(name):
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", name.lower())).strip("_")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="the KernelBench model file")
    parser.add_argument("--id", required=True, help="the problem id, e.g. L1_019")
    parser.add_argument("--upstream-path", help="the file's path in KernelBench "
                        "(default: the file argument)")
    parser.add_argument("--commit", required=True, help="the upstream commit (40 hex digits)")
    parser.add_argument("--out", help="directory to write <ID>_<name>.yaml into (default: stdout)")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        source = f.read()
    upstream = args.upstream_path or args.file
    try:
        spec = import_problem(source, upstream, args.id, args.commit)
    except ImportError_ as error:
        print(f"{args.file}: {error}", file=sys.stderr)
        return 1
    text = to_yaml(spec, f"KernelBench level {spec['level']}, imported by "
                         f"tools/kernelbench_import.py from {UPSTREAM_REPO} (upstream below).")
    if not args.out:
        sys.stdout.write(text)
        return 0
    path = os.path.join(args.out, f"{args.id}_{slug(spec['name'])}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
