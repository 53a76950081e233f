#!/usr/bin/env bash
# clang-format (check mode, repository .clang-format) on C++/CUDA; buildifier (check + lint) on Bazel files.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
rc=0
mapfile -t cxx < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp' '*.hpp')
if ((${#cxx[@]})); then
    clang-format-14 --dry-run --Werror "${cxx[@]}" || { echo "lint: clang-format: run clang-format-14 -i on the files above"; rc=1; }
fi
buildifier=$repo/.tools/node_modules/@bazel/buildifier/buildifier-linux_amd64
if [[ ! -x $buildifier ]]; then
    echo "lint: buildifier missing at $buildifier (run tools/setup.sh)"
    exit 1
fi
mapfile -t bzl < <(git ls-files 'BUILD' '*/BUILD' 'WORKSPACE' '*.bzl' '*.BUILD' | grep -v '^bazel/stubs/')
if ((${#bzl[@]})); then
    # Bazel 4.2.3 offline has only the native C++ and Python rules (Debian's rules_cc needs a newer Bazel,
    # rules_python is not installed), so the warnings that ask to load them from @rules_cc / @rules_python
    # are off; every other default warning is on.
    native=-native-cc-library,-native-cc-test,-native-cc-binary,-native-cc-import,-native-sh-test,-native-sh-binary
    native=$native,-native-cc-common,-native-cc-info,-native-cc-toolchain,-native-py
    "$buildifier" --mode=check --lint=warn --warnings="$native" "${bzl[@]}" || { echo "lint: buildifier: run $buildifier --lint=fix --warnings=$native on the files above"; rc=1; }
fi
((rc == 0)) && echo "lint: clean (${#cxx[@]} C++/CUDA files, ${#bzl[@]} Bazel files)"
exit $rc
