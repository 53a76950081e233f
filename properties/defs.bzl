"""qsa_property_test: one property source, compiled once as <name>_lib (also linked by //oracle's plant tests),
linked into the CPU variant <name> (host harness, //oracle as the implementation: runs in CI) and the GPU
variant <name>_gpu (tag gpu: device harness, whatever //api:impl points at). README "Two variants".
"""

load("//bazel:cc.bzl", "qsa_cc_test")

def qsa_property_test(name, srcs, shard_count = 2, size = "medium"):
    """Declares `name_lib`, the CPU variant `name` and the GPU variant `name_gpu` of one property source.

    Args:
      name: the CPU test's name; the GPU test is name + "_gpu", the library name + "_lib".
      srcs: the property sources.
      shard_count: shards of each variant (gtest splits the properties; each shard has its own seed).
      size: Bazel test size of both.
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
    for suffix, gpu, backend in [("", False, [":harness_host", "//oracle"]), ("_gpu", True, [":harness_gpu"])]:
        qsa_cc_test(
            name = name + suffix,
            size = size,
            srcs = [],
            gpu = gpu,
            gtest_main = False,
            shard_count = shard_count,
            deps = [
                ":" + name + "_lib",
                "@gtest//:gtest_main",
            ] + backend,
        )
