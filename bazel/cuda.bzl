"""cuda_library: nvcc per .cu file (parallel actions) -> static archive -> CcInfo, offline."""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

_ARCH_SETS = {
    "default": [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
    ],
    "all": [
        "-gencode=arch=compute_75,code=sm_75",
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_86,code=sm_86",
        "-gencode=arch=compute_89,code=sm_89",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_100,code=sm_100",
        "-gencode=arch=compute_120,code=sm_120",
        "-gencode=arch=compute_120,code=compute_120",
    ],
}

# The contract's `ieee` profile: no contraction of a*b+c (kernels call fmaf explicitly), IEEE division
# and square root, subnormals kept. -lineinfo so compute-sanitizer reports source lines.
_IEEE_NUMERICS = [
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
]

# numerics = "fast" (contract section 9, profile `fast`): --use_fast_math, i.e. --ftz=true (F5),
# --prec-div=false, --prec-sqrt=false, --fmad=true (F1, F4) and the approximate math functions. Everything
# else (the arch set, -O3, -lineinfo, the host compiler's flags) is the same as under `ieee`.
_FAST_NUMERICS = ["--use_fast_math"]

_NUMERICS = {"fast": _FAST_NUMERICS, "ieee": _IEEE_NUMERICS}

_COMMON = [
    "-lineinfo",
    "-Xcompiler",
    "-ffp-contract=off",
]

_NVCC_PRIVATE_TMP = 'tmp=$(mktemp -d "${TMPDIR:-/tmp}/qsa-nvcc.XXXXXXXX") || exit 1; TMPDIR="$tmp" "$@"; rc=$?; rm -rf "$tmp"; exit $rc'

ArchSetInfo = provider(doc = "The arch set chosen by //bazel:cuda_archs.", fields = ["name"])

def _cuda_archs_flag_impl(ctx):
    value = ctx.build_setting_value
    if value not in _ARCH_SETS:
        fail("//bazel:cuda_archs must be one of %s, got %r" % (sorted(_ARCH_SETS.keys()), value))
    return [ArchSetInfo(name = value)]

cuda_archs_flag = rule(
    implementation = _cuda_archs_flag_impl,
    build_setting = config.string(flag = True),
)

def _cuda_library_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    dep_infos = [d[CcInfo] for d in ctx.attr.deps]
    dep_cctx = cc_common.merge_cc_infos(cc_infos = dep_infos).compilation_context
    arch_set = ctx.attr._archs[ArchSetInfo].name

    args = ctx.actions.args()
    args.add_all(["-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-ccbin", cc_toolchain.compiler_executable])
    args.add_all(_ARCH_SETS[arch_set])

    # Which SASS and PTX this object carries, for tools that must report it (certify).
    sass = [g.split("code=sm_")[1] for g in _ARCH_SETS[arch_set] if "code=sm_" in g]
    ptx = [g.split("code=compute_")[1] for g in _ARCH_SETS[arch_set] if "code=compute_" in g]
    args.add("-DQSA_SASS_ARCHS=\"%s\"" % ",".join(sass))
    args.add("-DQSA_PTX_ARCHS=\"%s\"" % ",".join(ptx))
    args.add_all(_NUMERICS[ctx.attr.numerics])
    args.add_all(_COMMON)
    args.add_all(["-I.", "-I" + ctx.bin_dir.path, "-I" + ctx.genfiles_dir.path])
    args.add_all(dep_cctx.includes, format_each = "-I%s")
    args.add_all(dep_cctx.quote_includes, format_each = "-I%s")
    args.add_all(dep_cctx.system_includes, format_each = "-isystem=%s")
    args.add_all(dep_cctx.defines, format_each = "-D%s")
    args.add_all(ctx.attr.copts)

    inputs = depset(ctx.files.srcs + ctx.files.hdrs, transitive = [dep_cctx.headers])
    objs = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file("_objs/%s/%s.o" % (ctx.label.name, src.basename.rsplit(".", 1)[0]))
        ctx.actions.run_shell(
            # nvcc names its temporary files after its pid; in linux-sandbox every action's nvcc has the same pid
            # and /tmp is shared, so two concurrent compiles deleted each other's files ("cannot open source
            # file /tmp/tmpxft_00000002_..."). Each compile gets its own TMPDIR, removed afterwards.
            command = _NVCC_PRIVATE_TMP,
            # Absolute path: nvcc resolves its toolkit relative to argv[0].
            arguments = ["/usr/local/cuda/bin/nvcc", args, "-c", src.path, "-o", obj.path],
            inputs = inputs,
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s (%s archs%s)" % (src.short_path, arch_set, ", fast math" if ctx.attr.numerics == "fast" else ""),
            use_default_shell_env = True,
        )
        objs.append(obj)

    lib = ctx.actions.declare_file("lib%s.a" % ctx.label.name)
    ctx.actions.run(
        executable = cc_toolchain.ar_executable,
        arguments = ["rcsD", lib.path] + [o.path for o in objs],
        inputs = objs,
        outputs = [lib],
        mnemonic = "NvccArchive",
        use_default_shell_env = True,
    )

    library = cc_common.create_library_to_link(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        static_library = lib,
        pic_static_library = lib,
    )
    own = CcInfo(
        compilation_context = cc_common.create_compilation_context(headers = depset(ctx.files.hdrs)),
        linking_context = cc_common.create_linking_context(
            linker_inputs = depset([cc_common.create_linker_input(
                owner = ctx.label,
                libraries = depset([library]),
            )]),
        ),
    )
    return [
        DefaultInfo(files = depset([lib])),
        cc_common.merge_cc_infos(direct_cc_infos = [own], cc_infos = dep_infos),
    ]

cuda_library = rule(
    implementation = _cuda_library_impl,
    doc = "Compiles .cu files with nvcc (one action per file) into a static library usable by cc_* rules.",
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh", ".hpp"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        # "ieee" (contract section 4, every library of the project) or "fast" (section 9: --use_fast_math).
        "numerics": attr.string(default = "ieee", values = ["fast", "ieee"]),
        "_archs": attr.label(default = "//bazel:cuda_archs"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
    incompatible_use_toolchain_transition = True,
)
