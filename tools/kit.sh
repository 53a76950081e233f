#!/usr/bin/env bash
# The certification kit: the portable suite built ONCE against the run-time door //api:loaded, as a relocatable
# tarball that needs only an NVIDIA driver on the GPU host. It certifies a shared library from any build system:
#
#   tools/kit.sh qsa-kit.tar.xz [bazel build flags]          # here (default --config=all_archs; KIT_ARCHS=default
#                                                            # for the build's default arch set only)
#   tar -xJf qsa-kit.tar.xz && qsa-kit/certify --impl-lib ./libqsa.so [--out DIR] [certify flags]   # there
#
# The kit holds every property *_gpu binary, the fixture replay, certify, qsa_gpu, impl_check (the library's
# identity and load check, certify's first step) and exhaustive_primitives, with run_all.sh and engine.sh; the
# library's ABI (README "Certify your implementation"): the six functions of contract section 2 with their C++
# names, a CUDA runtime it can share (static, or a libcudart.so the host provides), C++ exceptions through the
# system's libgcc_s.
set -euo pipefail
if (($# < 1)); then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
out=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ ${KIT_ARCHS:-all} == default ]] || set -- --config=all_archs "$@"
stage=$(mktemp -d "${TMPDIR:-/tmp}/qsa-kit.XXXXXX")
trap 'rm -rf "$stage"' EXIT
kit=$stage/qsa-kit
BUNDLE_IMPL=//api:loaded BUNDLE_EXTRA="//api:impl_check //tools:exhaustive_primitives" \
    "$repo/tools/gpu_bundle.sh" "$kit" "$@"
# The one command, from wherever the kit was unpacked.
cat >"$kit/certify" <<'SH'
#!/usr/bin/env bash
# qsa-kit/certify --impl-lib LIB [--out DIR] [certify flags]: certifies LIB (QSA_LEVELS / QSA_PROFILE select
# what is judged; --help lists every flag). qsa-kit/impl_check LIB says whether LIB can be loaded, and why not.
kit=$(cd "$(dirname "$0")" && pwd)
exec "$kit/tools/tools/certify" "$@"
SH
cat >"$kit/impl_check" <<'SH'
#!/usr/bin/env bash
kit=$(cd "$(dirname "$0")" && pwd)
exec "$kit/tools/api/impl_check" "$@"
SH
cat >"$kit/qsa_gpu" <<'SH'
#!/usr/bin/env bash
# qsa-kit/qsa_gpu replay --impl-lib LIB DIR...: the fixtures judged on LIB (the implementation under test).
kit=$(cd "$(dirname "$0")" && pwd)
exec "$kit/tools/tools/qsa_gpu" "$@"
SH
chmod +x "$kit/certify" "$kit/impl_check" "$kit/qsa_gpu"
cp "$repo/fixtures/cases" -r "$kit/fixtures"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - qsa-kit | xz -T"$(nproc)" -9 >"$out"
echo "kit: $out ($(du -h "$out" | cut -f1)), $(grep -c '^tests' "$kit/MANIFEST") test binaries, $(grep -c '^tools' "$kit/MANIFEST") tools, commit $(cat "$kit/COMMIT")"
