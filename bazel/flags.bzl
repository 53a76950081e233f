"""A minimal bool build setting (bazel_skylib is not available offline).

kernels/BUILD declares `bool_flag(name = "enable_mutants")` and a config_setting on it; the qsa_kernels
cuda_library then compiles with -DQSA_MUTANTS only under --//kernels:enable_mutants=true (tools/mutants).
"""

BoolFlagInfo = provider(doc = "The value of a bool_flag.", fields = ["value"])

def _bool_flag_impl(ctx):
    return [BoolFlagInfo(value = ctx.build_setting_value)]

bool_flag = rule(
    implementation = _bool_flag_impl,
    build_setting = config.bool(flag = True),
)
