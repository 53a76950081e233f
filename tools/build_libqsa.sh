#!/usr/bin/env bash
# Builds this project's kernels as a shared library OUTSIDE Bazel, with plain nvcc and g++ command lines over the
# repository's sources: what another team's build system would do, and the library the certification kit's own
# acceptance run certifies (README "Certify your implementation"). Nothing here reads a Bazel output.
#
#   tools/build_libqsa.sh OUT.so [--fast] [--mutants] [--arch 90[,80...]] [--cudart static|shared] [-j N]
#                            [--objdir DIR]
#
#   --fast      profile `fast` (contract section 9): --use_fast_math and -DQSA_FAST_MATH, as //kernels:qsa_kernels_fast
#   --mutants   compile the QSA_MUTANT hooks in (tools/mutants; QSA_MUTANT=n at run time plants mutant n)
#   --arch      SASS architectures (default 80,90, as Bazel's default set; PTX of the last one is added)
#   --cudart    how the CUDA runtime is linked: static (nvcc's default; the kit's ABI, no libcudart.so needed on
#               the host) or shared (DT_NEEDED libcudart.so.<major>: the host must provide it)
#   --objdir    keep the objects there and reuse them (the same flags: e.g. one compile, two links)
# The flags are those of bazel/cuda.bzl (the contract's `ieee` numerics: --fmad=false --ftz=false
# --prec-div=true --prec-sqrt=true); the objects are linked by g++ -shared. Prints the compile and link lines.
set -euo pipefail
usage() {
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}
(($# >= 1)) || usage
out=$1
shift
numerics=(--fmad=false --ftz=false --prec-div=true --prec-sqrt=true)
defines=()
archs=80,90
cudart=static
jobs=$(nproc)
objdir=
while (($#)); do
    case $1 in
    --fast) numerics=(--use_fast_math) defines+=(-DQSA_FAST_MATH) ;;
    --mutants) defines+=(-DQSA_MUTANTS) ;;
    --arch) archs=$2 && shift ;;
    --cudart) cudart=$2 && shift ;;
    -j) jobs=$2 && shift ;;
    --objdir) objdir=$2 && shift ;;
    *) usage ;;
    esac
    shift
done
[[ $cudart == static || $cudart == shared ]] || usage
repo=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_PATH:-/usr/local/cuda}
gencode=()
IFS=, read -ra list <<<"$archs"
for a in "${list[@]}"; do gencode+=("-gencode=arch=compute_$a,code=sm_$a"); done
gencode+=("-gencode=arch=compute_${list[-1]},code=compute_${list[-1]}")
if [[ -z $objdir ]]; then
    objdir=$(mktemp -d "${TMPDIR:-/tmp}/libqsa-obj.XXXXXX")
    trap 'rm -rf "$objdir"' EXIT
fi
mkdir -p "$objdir"
objdir=$(cd "$objdir" && pwd)
# The sources of //kernels:qsa_kernels, from THE list in kernels/BUILD.
mapfile -t sources < <(sed -n '/^KERNEL_SRCS = \[/,/\]/p' "$repo/kernels/BUILD" | grep -o '"[^"]*\.cu"' | tr -d '"' |
    sed 's|^|kernels/|')
compile() { # source
    local src=$1 obj
    obj=$objdir/$(basename "${src%.cu}").o
    [[ ! -s $obj ]] || return 0
    local cmd=("$cuda/bin/nvcc" -std=c++17 -O3 -Xcompiler -fPIC "${gencode[@]}" "${numerics[@]}" -lineinfo
        -Xcompiler -ffp-contract=off ${defines[@]+"${defines[@]}"} -I"$repo" -c "$repo/$src" -o "$obj")
    echo "${cmd[*]}"
    TMPDIR=$objdir "${cmd[@]}"
}
export -f compile
export objdir repo cuda
printf '%s\n' "${sources[@]}" | {
    pids=()
    while read -r src; do
        while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
        compile "$src" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
}
if [[ $cudart == static ]]; then
    rt=("$cuda/lib64/libcudart_static.a" -ldl -lpthread -lrt)
else
    rt=(-L"$cuda/lib64" -lcudart)
fi
# shellcheck disable=SC2054  # -Wl,--build-id is one linker flag
link=(g++ -shared -o "$out" "$objdir"/*.o "${rt[@]}" -Wl,--build-id)
echo "${link[*]}"
"${link[@]}"
echo "build_libqsa: $out ($(du -h "$out" | cut -f1); ${#sources[@]} sources; archs $archs; cudart $cudart${defines[*]:+; ${defines[*]}})"
