#!/usr/bin/env python3
"""The KernelBench sources of the seed file, made executable again.

The seed (../shared/seeds/*.txt) is JSON: {id: {name, level, family, instruction}}. Each
instruction holds the problem's PyTorch module inside a ```python fence, but its indentation was
collapsed: top-level lines have no leading space and every indented line has exactly one. This
module restores the indentation (restore_indentation) and returns a problem's module source
(module_source), ready for exec().

The indenter is a line scanner, not a parser. It tracks strings (including triple-quoted
docstrings), comments, open brackets and backslash continuations to find logical lines, and a
stack of open blocks (class, def, if/elif/else, for, while, with, try/except/finally) to place
each logical line:
  * a line without a leading space is at depth 0;
  * the line after a block header (a logical line ending in ':') is one deeper;
  * `def`, `class` and decorators go one deeper than the innermost enclosing class (else def);
  * `else`, `elif`, `except`, `finally` go to the depth of the block they continue;
  * after return/raise/pass/break/continue the innermost block is closed;
  * any other line stays at the depth of the line before it.
What it cannot know: a plain statement that follows a nested block's body at the outer level
(`for ...:` body, then a statement after the loop) stays in the body. None of the 22 problems has
one; `python3 tools/seed_source_test.py` proves every restored source compiles, runs and builds.

Usage: seed_source.py [--seeds DIR] ID     prints the restored source of ID
       seed_source.py [--seeds DIR] --list prints the ids in the seed
"""
import argparse
import glob
import json
import os
import re
import sys

INDENT = "    "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SEEDS_DIR = os.path.join(REPO_ROOT, "..", "shared", "seeds")

_FENCE = re.compile(r"```python\n(.*?)```", re.S)
_TERMINAL = ("return", "raise", "pass", "break", "continue")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
# Which earlier block a continuation clause attaches to.
_CONTINUES = {
    "else": ("if", "elif", "for", "while", "try", "except"),
    "elif": ("if", "elif"),
    "except": ("try", "except"),
    "finally": ("try", "except", "else"),
}


class _LineScanner:
    """Lexical state carried across physical lines: open string, bracket depth, continuation."""

    def __init__(self):
        self.quote = None  # the delimiter of the open string: ', ", ''' or """
        self.brackets = 0
        self.backslash = False

    def in_logical_line(self):
        return self.quote is not None or self.brackets > 0 or self.backslash

    def scan(self, text):
        """Consumes one physical line; returns its code with strings blanked, comment removed."""
        code = []
        i, n = 0, len(text)
        self.backslash = False
        while i < n:
            if self.quote is not None:
                if text.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    code.append("_")
                elif text[i] == "\\":
                    i += 2
                else:
                    i += 1
                continue
            c = text[i]
            if c == "#":
                break
            if c in "'\"":
                self.quote = c * 3 if text.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            if c in _OPENERS:
                self.brackets += 1
            elif c in _OPENERS.values():
                self.brackets -= 1
            code.append(c)
            i += 1
        if self.quote is not None and len(self.quote) == 1:
            self.quote = None  # a one-line string cannot span lines (without a backslash)
        stripped = "".join(code).rstrip()
        if stripped.endswith("\\"):
            self.backslash = True
            stripped = stripped[:-1]
        return stripped


class _Block:
    def __init__(self, kind, depth):
        self.kind = kind
        self.depth = depth


def _first_word(line):
    match = re.match(r"[A-Za-z_]\w*", line)
    return match.group(0) if match else ""


class _Indenter:
    def __init__(self):
        self.blocks = []          # open blocks, outermost first
        self.depth = 0            # depth of the last logical line
        self.expect_body = False  # the last logical line was a block header
        self.closed_by_terminal = False

    def _depth_for_definition(self):
        # A method's sibling rather than a nested function: KernelBench nests defs only in classes.
        for kinds in (("class",), ("def",)):
            for block in reversed(self.blocks):
                if block.kind in kinds:
                    return block.depth + 1
        return 1

    def _depth_for_clause(self, word):
        for index in range(len(self.blocks) - 1, -1, -1):
            if self.blocks[index].kind in _CONTINUES[word]:
                return self.blocks[index].depth
        raise SyntaxError(f"'{word}' without a block to continue")

    def place(self, line, indented):
        """The depth of a logical line that starts with `line` (leading space removed)."""
        word = _first_word(line)
        if not indented:
            return 0
        if self.expect_body:
            return self.blocks[-1].depth + 1
        if word in ("def", "class", "async") or line.startswith("@"):
            return self._depth_for_definition()
        if word in _CONTINUES:
            return self._depth_for_clause(word)
        if self.closed_by_terminal:
            return max(self.blocks[-1].depth if self.blocks else 0, 1)
        return max(self.depth, 1)

    def commit(self, first_line, depth, code):
        """Records a placed logical line; `code` is its text with strings and comments removed."""
        while self.blocks and self.blocks[-1].depth >= depth:
            self.blocks.pop()
        self.depth = depth
        self.expect_body = code.endswith(":")
        if self.expect_body:
            kind = _first_word(first_line)
            if kind == "async":
                kind = "def"
            self.blocks.append(_Block(kind, depth))
        word = _first_word(first_line)
        self.closed_by_terminal = word in _TERMINAL and not self.expect_body


def restore_indentation(collapsed):
    """Re-indents source whose indented lines all carry exactly one leading space."""
    scanner = _LineScanner()
    indenter = _Indenter()
    out = []
    stmt_depth = 0
    first_line, code = "", ""
    for raw in collapsed.split("\n"):
        continuing = scanner.in_logical_line()
        in_string = scanner.quote is not None
        indented = raw.startswith(" ")
        text = raw[1:] if indented else raw
        if continuing:
            code += " " + scanner.scan(text)
            if not text.strip():
                out.append("")
            elif in_string:
                out.append(INDENT * stmt_depth + text)
            else:
                extra = 0 if text.lstrip()[:1] in _OPENERS.values() else 1
                out.append(INDENT * (stmt_depth + extra) + text.lstrip())
        elif not text.strip():
            out.append("")
            continue
        elif text.lstrip().startswith("#"):
            depth = indenter.place(text.lstrip(), indented)
            out.append(INDENT * depth + text.lstrip())
            continue
        else:
            first_line = text.lstrip()
            stmt_depth = indenter.place(first_line, indented)
            code = scanner.scan(first_line)
            out.append(INDENT * stmt_depth + first_line)
        if not scanner.in_logical_line():
            indenter.commit(first_line, stmt_depth, code.rstrip())
    return "\n".join(out)


def seed_files(seeds_dir):
    files = sorted(glob.glob(os.path.join(seeds_dir, "*.txt")))
    if not files:
        raise FileNotFoundError(f"no seed file (*.txt) in {seeds_dir}")
    return files


def load_seed(seeds_dir=DEFAULT_SEEDS_DIR):
    """{id: {name, level, family, instruction}} merged over the seed files of `seeds_dir`."""
    problems = {}
    for path in seed_files(seeds_dir):
        with open(path, encoding="utf-8") as f:
            problems.update(json.load(f))
    return problems


def collapsed_source(problem):
    """The fenced Python of one seed entry, as the seed has it (indentation collapsed)."""
    blocks = _FENCE.findall(problem["instruction"])
    if len(blocks) != 1:
        raise ValueError(f"expected one ```python block, found {len(blocks)}")
    return blocks[0]


def module_source(problem_id, seeds_dir=DEFAULT_SEEDS_DIR, seed=None):
    """The executable module source of `problem_id` (pass `seed` to reuse a loaded seed)."""
    seed = seed if seed is not None else load_seed(seeds_dir)
    if problem_id not in seed:
        raise KeyError(f"{problem_id} is not in the seed ({len(seed)} problems)")
    return restore_indentation(collapsed_source(seed[problem_id])) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default=DEFAULT_SEEDS_DIR, help="directory of the seed *.txt")
    parser.add_argument("--list", action="store_true", help="list the problem ids")
    parser.add_argument("id", nargs="?")
    args = parser.parse_args(argv)
    seed = load_seed(args.seeds)
    if args.list or not args.id:
        print("\n".join(sorted(seed)))
        return 0
    sys.stdout.write(module_source(args.id, seed=seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
