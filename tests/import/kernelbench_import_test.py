#!/usr/bin/env python3
"""The importer (tools/kernelbench_import.py) on three KernelBench-style model files of our own
(tests/import/models/, written for this test, not KernelBench's code): the graph's ops and their
configuration, the dims named after the file's globals, the presets, inputs and parameters, the
`upstream:` block, and a spec `kb problems validate` accepts; an op outside the catalog is an
error that names it.

CTest label `import`. Needs python3-torch and python3-yaml (deploy/install-test-deps.sh); exits
77 (skipped) without torch. Usage: kernelbench_import_test.py [--kb build/cli/kb]
"""
import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(HERE, "models")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))

try:
    import torch  # noqa: F401
except ImportError:
    print("kernelbench_import_test: no python3-torch, skipped")
    sys.exit(77)
import yaml  # noqa: E402

import kernelbench_import as importer  # noqa: E402

KB = None  # --kb: the built kb, to validate the written specs


def model(name):
    with open(os.path.join(MODELS, name), encoding="utf-8") as f:
        return f.read()


def imported(name, problem_id):
    """(spec dict, the YAML the importer writes read back)."""
    spec = importer.import_problem(model(name), "tests/import/models/" + name, problem_id, COMMIT)
    return spec, yaml.safe_load(importer.to_yaml(spec, "test"))


class ImporterTest(unittest.TestCase):
    def assert_valid(self, spec):
        """`kb problems validate` accepts the written file (skipped without --kb)."""
        if not KB:
            return
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"{spec['id']}_{importer.slug(spec['name'])}.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(importer.to_yaml(spec, "test"))
            result = subprocess.run([KB, "problems", "validate", path], capture_output=True,
                                    text=True)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_linear_sigmoid_scale(self):
        spec, written = imported("901_Linear_Sigmoid_Scale.py", "L2_901")
        self.assertEqual(written["name"], "Linear_Sigmoid_Scale")
        self.assertEqual([n["op"] for n in written["graph"]], ["linear", "sigmoid", "mul_scalar"])
        self.assertEqual(written["graph"][2]["value"], 1.5)
        self.assertEqual(written["dims"], ["batch_size", "in_features", "out_features"])
        presets = written["presets"]
        self.assertEqual(presets["full"], {"batch_size": 64, "in_features": 96, "out_features": 48})
        self.assertEqual(presets["small"]["batch_size"], 2)
        self.assertEqual(presets["odd"]["batch_size"], 1)
        self.assertTrue(all(v % 2 == 1 for k, v in presets["odd"].items() if k != "batch_size"))
        self.assertEqual(written["inputs"], [{"name": "x", "shape": ["batch_size", "in_features"],
                                              "generator": "uniform"}])
        params = {p["name"]: p for p in written["parameters"]}
        self.assertEqual(params["fc.weight"]["shape"], ["out_features", "in_features"])
        self.assertEqual(params["fc.weight"]["init"], "kaiming_uniform")
        self.assertEqual(params["fc.bias"]["fan_in_of"], "fc.weight")
        self.assertEqual(written["upstream"], {"repo": "ScalingIntelligence/KernelBench",
                                               "commit": COMMIT,
                                               "path": "tests/import/models/"
                                                       "901_Linear_Sigmoid_Scale.py"})
        self.assertNotIn("source", written)
        self.assert_valid(spec)

    def test_conv_relu_bias_keeps_the_layers_effective_configuration(self):
        spec, written = imported("902_Conv2d_ReLU_BiasAdd.py", "L2_902")
        self.assertEqual([n["op"] for n in written["graph"]], ["conv", "relu", "add"])
        conv = written["graph"][0]
        self.assertEqual((conv["stride"], conv["padding"], conv["dilation"], conv["groups"]),
                         ([1, 1], [1, 1], [1, 1], 1))
        self.assertEqual(written["dims"],
                         ["batch_size", "in_channels", "out_channels", "height", "width"])
        self.assertEqual(written["presets"]["full"], {"batch_size": 8, "in_channels": 3,
                                                      "out_channels": 16, "height": 24,
                                                      "width": 24})
        for preset in ("small", "odd"):
            for dim, value in written["presets"][preset].items():
                self.assertLessEqual(value, written["presets"]["full"][dim], (preset, dim))
        self.assertEqual(written["inputs"][0]["generator"], "normal")
        params = {p["name"]: p for p in written["parameters"]}
        self.assertEqual(params["conv.weight"]["shape"], ["out_channels", "in_channels", 3, 3])
        self.assertEqual(params["bias"]["shape"], ["out_channels", 1, 1])
        self.assertEqual(params["bias"]["init"], "normal")
        self.assert_valid(spec)

    def test_an_op_outside_the_catalog_is_an_error_naming_it(self):
        with self.assertRaises(importer.ImportError_) as raised:
            imported("903_RunningSum.py", "L1_903")
        self.assertIn("ops outside the catalog: torch.cumsum", str(raised.exception))
        # The command line says so too, with the file, and exits 1 without writing a spec.
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            code = importer.main([os.path.join(MODELS, "903_RunningSum.py"), "--id", "L1_903",
                                  "--commit", COMMIT])
        self.assertEqual(code, 1)
        self.assertIn("903_RunningSum.py: ops outside the catalog: torch.cumsum",
                      stderr.getvalue())
        self.assertEqual(stdout.getvalue(), "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", help="the built kb (validates the written specs)")
    args, rest = parser.parse_known_args()
    KB = args.kb
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
