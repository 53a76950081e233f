"""qsa_property_test: one property source, two test binaries (and a library the plant tests link too).

<name>_lib  the compiled property source (testonly, alwayslink): compiled once, linked by both variants and by
            //oracle's plant tests (oracle/plant_tests.bzl).
<name>      CPU variant: the harness over host memory and the literal oracle (//oracle) as the
            implementation of the API; runs in CI without a GPU.
<name>_gpu  GPU variant (tags ["gpu"], exec_properties for a remote GPU pool): the harness over device memory and
            whatever //api:impl points at (default //kernels:qsa_kernels).

Both are sharded: gtest splits the properties over the shards; each runs its whole budget with its shard's own RapidCheck seed
(properties/prop.cc, README "Sharding and remote GPU pools").
"""

load("//bazel:cc.bzl", "qsa_cc_test")

def qsa_property_test(name, srcs, shard_count = 2, gpu_shard_count = 2, size = "medium", cpu = True, gpu = True):
    """Declares `name_lib`, the CPU variant `name` and the GPU variant `name_gpu` of one property source.

    Args:
      name: the CPU test's name; the GPU test is name + "_gpu", the library name + "_lib".
      srcs: the property sources.
      shard_count: shards of the CPU variant.
      gpu_shard_count: shards of the GPU variant.
      size: Bazel test size of both.
      cpu: whether to declare the CPU variant.
      gpu: whether to declare the GPU variant.
    """
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = srcs,
        deps = [
            ":prop_lib",
            "@gtest",
            "@rapidcheck//:rapidcheck_gtest",
        ],
        alwayslink = True,  # the TESTs register themselves from static initializers
    )

    # Link order: the property code (which needs the harness) first, the backend and implementation last (so
    # gtest_main is listed here, in its place, not added by qsa_cc_test).
    common = [
        ":" + name + "_lib",
        "@gtest//:gtest_main",
    ]
    if cpu:
        qsa_cc_test(
            name = name,
            size = size,
            srcs = [],
            gtest_main = False,
            shard_count = shard_count,
            deps = common + [
                ":harness_host",
                "//oracle",
            ],
        )
    if gpu:
        qsa_cc_test(
            name = name + "_gpu",
            size = size,
            srcs = [],
            gpu = True,
            gtest_main = False,
            shard_count = gpu_shard_count,
            deps = common + [":harness_gpu"],
        )
