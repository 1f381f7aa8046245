# A KernelBench-style model file written for kbfleet's importer test (not KernelBench's code):
# a padded 3x3 Conv2d, ReLU and a learned per-channel bias.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d (padding 1), ReLU, then a bias parameter of shape (C_out, 1, 1) added."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return x + self.bias


batch_size = 8
in_channels = 3
out_channels = 16
height = width = 24
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
