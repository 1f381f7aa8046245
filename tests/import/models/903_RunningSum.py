# A KernelBench-style model file written for kbfleet's importer test (not KernelBench's code):
# torch.cumsum is outside the op catalog, so the import must stop and name it.
import torch
import torch.nn as nn


class Model(nn.Module):
    """A running sum along the last dimension."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 16
length = 64
dim = 1


def get_inputs():
    return [torch.rand(batch_size, length)]


def get_init_inputs():
    return [dim]
