# A KernelBench-style model file written for kbfleet's importer test (not KernelBench's code):
# a Linear layer, a sigmoid and a scalar scale.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, then sigmoid, then multiplication by a constant."""

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.fc(x)
        x = torch.sigmoid(x)
        return x * self.scale


batch_size = 64
in_features = 96
out_features = 48
scale = 1.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
