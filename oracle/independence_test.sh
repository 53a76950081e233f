#!/usr/bin/env bash
# The oracle shares with reference/ only the exhaustively verified casts and rsqrtRn (reference/numerics.h),
# and from the same header the float bit casts and the FP environment guard (no contract arithmetic): fails when
# a source of oracle/ includes any other header of reference/ or names a qsa::ref symbol other than those eight. Usage: independence_test.sh ORACLE_SOURCES...
set -uo pipefail
fail=0
allowed='halfToFloat|bf16ToFloat|floatToHalf|floatToBf16|rsqrtRn|floatBits|bitsFloat|FpEnvGuard'
for f in "$@"; do
    while IFS= read -r line; do
        echo "independence_test: $f includes $line (only reference/numerics.h is shared)" >&2
        fail=1
    done < <(grep -oE '#include "reference/[^"]+"' "$f" | grep -v '"reference/numerics.h"')
    while IFS= read -r sym; do
        echo "independence_test: $f uses $sym (only ref::{$allowed} are shared)" >&2
        fail=1
    done < <(grep -oE '\bref::[A-Za-z_][A-Za-z0-9_]*' "$f" | grep -vE "^ref::($allowed)$" | sort -u)
done
((fail == 0)) && echo "independence_test: $# oracle sources use only reference/numerics.h's casts and rsqrtRn"
exit $fail
