"""qsa_property_test: one property source, two test binaries.

<name>      CPU variant: the harness over host memory and the reference implementation of the API
            (reference_impl.cc); runs in CI without a GPU.
<name>_gpu  GPU variant (tags ["gpu"], exec_properties for a remote GPU pool): the harness over device memory
            and whatever //api:impl points at (default //kernels:qsa_kernels).

Both are sharded: gtest splits the properties over the shards; each runs its whole budget with its shard's own RapidCheck seed
(properties/prop.cc, README "Sharding and remote GPU pools").
"""

load("//bazel:remote.bzl", _GPU_EXEC_PROPERTIES = "GPU_EXEC_PROPERTIES")

GPU_EXEC_PROPERTIES = _GPU_EXEC_PROPERTIES

def qsa_property_test(name, srcs, shard_count = 2, gpu_shard_count = 2, size = "medium", cpu = True, gpu = True):
    """Declares the CPU variant `name` and the GPU variant `name_gpu` of one property source.

    Args:
      name: the CPU test's name; the GPU test is name + "_gpu".
      srcs: the property sources.
      shard_count: shards of the CPU variant.
      gpu_shard_count: shards of the GPU variant.
      size: Bazel test size of both.
      cpu: whether to declare the CPU variant.
      gpu: whether to declare the GPU variant.
    """
    common = [
        ":prop_lib",
        "@gtest//:gtest_main",
        "@rapidcheck//:rapidcheck_gtest",
    ]
    if cpu:
        native.cc_test(
            name = name,
            srcs = srcs,
            size = size,
            linkstatic = True,
            shard_count = shard_count,
            deps = common + [":harness_host"],
        )
    if gpu:
        native.cc_test(
            name = name + "_gpu",
            srcs = srcs,
            size = size,
            linkstatic = True,
            shard_count = gpu_shard_count,
            exec_properties = GPU_EXEC_PROPERTIES,
            tags = ["gpu"],
            deps = common + [":harness_gpu"],
        )
