#!/usr/bin/env bash
# Installs what building and testing this project needs (idempotent) and writes .bazelrc.user for this
# machine: without a GPU the gpu-tagged tests are filtered out, loudly.
# Run it as yourself or as root: `tools/setup.sh`. Only installing missing Debian packages needs root; a
# non-root user then gets that one step re-run through sudo (`tools/setup.sh --install-packages`), so the
# files it writes in the checkout (.bazelrc.user, .tools/) stay the user's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
self=$repo/tools/setup.sh
CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
# python3-numpy and python3-pytest: the Python fixture package and its py_test targets (//python);
# python3-venv, python3-setuptools and python3-wheel: its offline `pip install ./python` (//python:install_test).
packages=(bazel-bootstrap libeigen3-dev librapidcheck-dev libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev
    python3-numpy python3-pytest python3-venv python3-setuptools python3-wheel)

missingPackages() {
    local p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

installPackages() { # as root
    echo "setup.sh: installing $*"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [[ ${1:-} == --install-packages ]]; then # the privileged step alone (what the sudo re-run does)
    [[ $(id -u) -eq 0 ]] || { echo "setup.sh: --install-packages needs root" >&2; exit 1; }
    mapfile -t missing < <(missingPackages)
    if ((${#missing[@]})); then installPackages "${missing[@]}"; fi
    exit 0
fi

mapfile -t missing < <(missingPackages)
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
        installPackages "${missing[@]}"
    elif command -v sudo >/dev/null; then
        echo "setup.sh: missing packages ${missing[*]}; not root, so re-running the install step as: sudo $self --install-packages"
        sudo -- "$self" --install-packages || {
            echo "setup.sh: 'sudo $self --install-packages' failed; as root, run: apt-get install ${missing[*]}" \
                "(or run tools/setup.sh as root), then tools/setup.sh again" >&2
            exit 1
        }
    else
        echo "setup.sh: missing packages ${missing[*]}; installing them needs root and there is no sudo here." \
            "As root, run tools/setup.sh (or: apt-get install ${missing[*]}), then tools/setup.sh again as yourself" >&2
        exit 1
    fi
    mapfile -t missing < <(missingPackages)
    if ((${#missing[@]})); then
        echo "setup.sh: packages still missing after the install: ${missing[*]}" >&2
        exit 1
    fi
fi

# nvcc: the kernels need CUDA >= 12.4 (CCCL with DeviceSegmentedRadixSort over DoubleBuffer, sm_90).
nvcc="$CUDA_PATH/bin/nvcc"
if [[ ! -x $nvcc ]]; then
    echo "setup.sh: no nvcc at $nvcc; install the CUDA toolkit (>= 12.4) or set CUDA_PATH" >&2
    exit 1
fi
version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r major minor <<<"$version"
if [[ -z ${major:-} ]] || ((major < 12 || (major == 12 && minor < 4))); then
    echo "setup.sh: nvcc at $nvcc is release ${major:-?}.${minor:-?}; this project needs CUDA >= 12.4" >&2
    exit 1
fi
if [[ $CUDA_PATH != /usr/local/cuda ]]; then
    echo "setup.sh: note: the WORKSPACE reads the toolkit at /usr/local/cuda; link it to $CUDA_PATH" >&2
fi

# buildifier for tools/lint.sh (npm package; offline-installable from the npm registry mirror).
if [[ ! -x $repo/.tools/node_modules/@bazel/buildifier/buildifier-linux_amd64 ]]; then
    if command -v npm >/dev/null; then
        npm install --silent --no-audit --no-fund --prefix "$repo/.tools" @bazel/buildifier@8.2.1 >/dev/null ||
            echo "setup.sh: warning: could not install buildifier; tools/lint.sh will fail" >&2
    else
        echo "setup.sh: warning: npm not found; tools/lint.sh needs buildifier" >&2
    fi
fi

# GPU detection decides which tests `bazel test //...` runs here.
gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
fi
{
    echo "# Written by tools/setup.sh on $(date -u +%F): $gpus GPU(s) seen by nvidia-smi."
    if ((gpus == 0)); then
        echo "test --test_tag_filters=-gpu"
    fi
} >"$repo/.bazelrc.user"
if ((gpus == 0)); then
    echo "setup.sh: no GPU on this machine, so the GPU suites (tests tagged gpu) will not run here;" \
        "run them on a GPU machine with 'bazel test //...' or build 'tools/gpu_bundle.sh OUTDIR' here and run OUTDIR/run_all.sh there."
else
    echo "setup.sh: $gpus GPU(s) found; 'bazel test //...' runs the GPU suites too."
fi
