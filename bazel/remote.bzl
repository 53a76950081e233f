"""Execution properties of the tests that need a GPU, for a remote-execution service's GPU pool.

Every test that needs a GPU (qsa_cc_test(gpu = True) of bazel/cc.bzl, tagged "gpu") carries exec_properties =
GPU_EXEC_PROPERTIES: with --config=remote (.bazelrc) the service schedules it on a worker of the pool whose
platform has these properties (README "Remote GPU pools").
Locally (no remote execution) exec_properties are ignored. Change the key/value to your service's GPU pool.
"""

GPU_EXEC_PROPERTIES = {
    "Pool": "gpu",
    "gpu": "1",
}
