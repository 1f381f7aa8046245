#!/usr/bin/env python3
"""Tests of tools/seed_source.py: the indenter on small cases, then on every problem of the seed
(compile, exec, build Model(*get_init_inputs()) as KernelBench does; needs python3-torch).

Run: python3 tools/seed_source_test.py [-v]   (seeds from ../shared/seeds, or $KB_SEEDS_DIR)
"""
import os
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_source  # noqa: E402

SEEDS_DIR = os.environ.get("KB_SEEDS_DIR", seed_source.DEFAULT_SEEDS_DIR)


def collapse(source):
    """What the seed did to the sources: every indented line keeps exactly one leading space."""
    lines = []
    for line in textwrap.dedent(source).strip("\n").split("\n"):
        lines.append(" " + line.lstrip() if line[:1] == " " else line)
    return "\n".join(lines)


class RestoreIndentationTest(unittest.TestCase):
    def assert_round_trip(self, source):
        expected = textwrap.dedent(source).strip("\n")
        self.assertEqual(seed_source.restore_indentation(collapse(source)), expected)

    def test_class_with_methods_and_docstrings(self):
        self.assert_round_trip('''
            class Model(nn.Module):
                """
                Doc.
                """
                def __init__(self, a):
                    super().__init__()
                    self.a = a

                def forward(self, x):
                    """Forward."""
                    return x * self.a

            batch_size = 3
            ''')

    def test_if_else_inside_method_then_sibling_method(self):
        self.assert_round_trip('''
            class M:
                def __init__(self, a, b):
                    if a == b:
                        self.s = 1
                    elif a > b:
                        self.s = 2
                    else:
                        self.s = nn.Sequential(
                            f(a),
                            g(b)
                        )

                def forward(self, x):
                    return x
            ''')

    def test_return_closes_the_innermost_block(self):
        self.assert_round_trip('''
            def f(x):
                if x:
                    return 1
                for i in range(3):
                    if i:
                        continue
                    with ctx():
                        x += i
            y = 2
            ''')

    def test_known_limit_a_statement_after_a_nested_body_stays_in_it(self):
        # The collapsed text cannot tell the two apart; documented in seed_source.py.
        restored = seed_source.restore_indentation("def f(x):\n for i in r:\n x += i\n return x")
        self.assertEqual(restored, "def f(x):\n    for i in r:\n        x += i\n        return x")

    def test_try_except_finally(self):
        self.assert_round_trip('''
            def f():
                try:
                    g()
                except ValueError:
                    pass
                finally:
                    h()
            ''')

    def test_brackets_strings_and_comments_do_not_open_blocks(self):
        self.assert_round_trip('''
            def f(a: int,
                b: int = 1):
                d = {"k:": 1,  # a colon in a comment:
                    'x': 2}
                s = "if x:"
                return d[a:b]
            ''')

    def test_comment_line_takes_the_depth_of_the_next_statement(self):
        self.assert_round_trip('''
            class C:
                def __init__(self):
                    # a comment
                    self.x = 1
            # top-level comment
            y = 2
            ''')

    def test_decorator_and_backslash_continuation(self):
        self.assert_round_trip('''
            class C:
                @staticmethod
                def f(x):
                    return x + \\
                        1
            ''')

    def test_unmatched_else_is_an_error(self):
        with self.assertRaises(SyntaxError):
            seed_source.restore_indentation("def f():\n x = 1\n else:\n y = 2")


@unittest.skipUnless(os.path.isdir(SEEDS_DIR), f"no seed directory at {SEEDS_DIR}")
class SeedSourcesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.seed = seed_source.load_seed(SEEDS_DIR)

    def test_every_source_compiles_and_defines_the_kernelbench_interface(self):
        for problem_id in sorted(self.seed):
            with self.subTest(problem_id):
                source = seed_source.module_source(problem_id, seed=self.seed)
                namespace = {}
                exec(compile(source, f"<seed {problem_id}>", "exec"), namespace)
                for name in ("Model", "get_inputs", "get_init_inputs"):
                    self.assertIn(name, namespace)

    def test_every_model_builds_as_kernelbench_builds_it(self):
        try:
            import torch
        except ImportError:
            self.skipTest("python3-torch is not installed")
        for problem_id in sorted(self.seed):
            with self.subTest(problem_id):
                namespace = {}
                exec(seed_source.module_source(problem_id, seed=self.seed), namespace)
                torch.manual_seed(42)
                model = namespace["Model"](*namespace["get_init_inputs"]())
                self.assertTrue(model.training)
                self.assertTrue(callable(model.forward))


if __name__ == "__main__":
    unittest.main()
