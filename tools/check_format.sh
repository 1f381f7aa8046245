#!/usr/bin/env bash
# The format check (CTest `style.clang_format`): every C++/CUDA line changed since the commit in
# tools/format-base must be as clang-format (.clang-format) writes it. Lines older than that base
# are formatted when they are next touched, so the check never asks for a tree-wide reformat.
#
# usage: tools/check_format.sh        (exit 0: clean; 1: a diff is printed; 77: cannot check)
# To fix: git clang-format "$(cat tools/format-base)"
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
command -v git-clang-format >/dev/null || { echo "check_format: git-clang-format not installed" >&2; exit 77; }
base=$(cat tools/format-base)
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check_format: base $base is not in this clone (shallow?): nothing to compare with" >&2
  exit 77
fi
diff=$(git clang-format --diff --extensions h,cpp,cu,cuh,cc "$base" 2>&1 || true)
if grep -q '^diff --git' <<<"$diff"; then
  echo "$diff"
  echo "check_format: the lines above differ from clang-format; run: git clang-format $base" >&2
  exit 1
fi
echo "check_format: every line changed since $base is clang-formatted"
