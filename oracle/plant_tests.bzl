"""The planted bugs of oracle/plants.h re-run as expected-failure tests.

For each entry of PLANTS: a copy of the oracle built with -DQSA_PLANT=<plant>, the property binary of
//properties:<binary>_lib linked against it, and a test that passes ONLY when that binary, run with
--gtest_filter=<filter>, fails and its output contains <expect>. A plant with pass_filter / pass_levels (a plant
that is legal at those levels, contract section 8) also gets plant<n>_pass_test: the same binary, run with
--gtest_filter=<pass_filter> and QSA_LEVELS=<pass_levels>, must PASS (expect_pass.sh).
"""

# The stages with plant sites (compiled once more per plant, with -DQSA_PLANT=n) ...
ORACLE_PLANTED_SRCS = [
    "api.cc",
    "decode.cc",
    "prefill.cc",
]

ORACLE_PLANTED_HDRS = [
    "plants.h",
    "stages.h",
]

# ... and the plant-free scalar steps, pool addressing and selection keys (compiled once: //oracle:oracle_core).
ORACLE_CORE_SRCS = [
    "pool.cc",
    "scalar.cc",
    "select.cc",
]

ORACLE_CORE_HDRS = [
    "pool.h",
    "scalar.h",
    "stages.h",
]

# A product and a sum written apart are two roundings; fma only where the contract says fma.
ORACLE_COPTS = [
    "-ffp-contract=off",
    "-fno-fast-math",
]

def _slot_differs(stage, slot):
    """The text of properties/prop.cc when a stage's workspace slot (contract section 6) differs."""
    return "%s (workspace slot %s, contract section 6) differs from the reference" % (stage, slot)

# plant: oracle/plants.h number; binary: the property target in //properties (its _lib is linked); filter: the
# property (gtest name); expect: texts one of which its failure output must contain (no single quote: each is
# passed quoted); pass_filter / pass_levels (optional): what must pass at which levels (expect_pass.sh).
PLANTS = [
    struct(plant = 1, binary = "differential_test", filter = "Differential.PrefillMatchesReference", expect = ["prefill vs reference"]),
    struct(plant = 2, binary = "layout_test", filter = "Layout.PrefillRowsObeyK4", expect = ["expected -1 (entries must be in [0, t]"]),
    struct(plant = 3, binary = "padding_test", filter = "Padding.PaddedRowsAllMinusOneAndPoisonIgnored", expect = ["padded row b="]),
    struct(plant = 4, binary = "determinism_test", filter = "Determinism.PrefillRepeatsBitwise", expect = ["vs run 0"]),
    struct(plant = 5, binary = "batch_invariance_test", filter = "BatchInvariance.SequenceAloneVsInBatch", expect = ["in batch vs alone"]),
    struct(plant = 6, binary = "prefill_decode_test", filter = "PrefillDecode.StepsMatchPrefillRows", expect = ["V-tail of block"]),
    struct(plant = 7, binary = "pool_hygiene_test", filter = "PoolHygiene.PrefillTouchesOnlyContractCells", expect = ["a cell outside the contract"]),
    struct(plant = 8, binary = "workspace_test", filter = "Workspace.MisalignedThrows", expect = ["misaligned prefill workspace (+64 bytes): did not throw"]),
    struct(plant = 9, binary = "differential_test", filter = "Differential.ChunkedPrefillMatchesReference", expect = ["chunked prefill vs reference"]),
    struct(plant = 10, binary = "differential_test", filter = "Differential.DecodeStepsMatchReference", expect = [_slot_differs("B1", "qNormed")]),
    struct(plant = 11, binary = "differential_test", filter = "Differential.DecodeStepsMatchReference", expect = [_slot_differs("B2", "logits")]),
    struct(plant = 12, binary = "differential_test", filter = "Differential.PrefillMatchesReference", expect = [_slot_differs("K1a", "qNormed")]),
    struct(plant = 13, binary = "differential_test", filter = "Differential.PrefillMatchesReference", expect = [_slot_differs("K1b", "kbar")]),
    struct(plant = 14, binary = "pool_hygiene_test", filter = "PoolHygiene.PrefillHostilePoolTouchesOnlyContractCells", expect = [
        "a cell outside the contract",
        "the pool guard region AFTER the pool",
    ]),
    struct(plant = 15, binary = "decode_stages_test", filter = "DecodeStages.B1QPrepMatchesReference", expect = ["B1 qNormed row b="]),
    struct(plant = 16, binary = "differential_test", filter = "Differential.PrefillMatchesReference", expect = [_slot_differs("K1b", "kbar")]),
    struct(plant = 17, binary = "pool_hygiene_test", filter = "PoolHygiene.DecodeHostilePoolTouchesOnlyContractCells", expect = [
        "V-tail cell of a valid block was not written",
    ], pass_filter = "PoolHygiene.*", pass_levels = "core"),
]

def plant_tests(name = "plant_tests"):
    """Declares oracle_plant<n>, plant<n>_<binary> and the expected-failure test plant<n>_test per PLANTS entry.

    Args:
      name: the test_suite of every plant test.
    """
    tests = []
    for p in PLANTS:
        lib = "oracle_plant%d" % p.plant
        native.cc_library(
            name = lib,
            testonly = True,
            srcs = ORACLE_PLANTED_SRCS,
            hdrs = ORACLE_PLANTED_HDRS,
            copts = ORACLE_COPTS,
            local_defines = ["QSA_PLANT=%d" % p.plant],
            deps = [
                ":oracle_core",
                "//api:headers",
            ],
            alwayslink = True,
        )
        binary = "plant%d_%s" % (p.plant, p.binary)
        native.cc_binary(
            name = binary,
            testonly = True,
            linkstatic = True,
            deps = [
                # do not sort: the property code before the backend and the implementation (as in //properties)
                "//properties:%s_lib" % p.binary,
                "@gtest//:gtest_main",
                "//properties:harness_host",
                ":" + lib,
            ],
        )
        test = "plant%d_test" % p.plant
        native.sh_test(
            name = test,
            size = "medium",
            srcs = ["expect_failure.sh"],
            args = [
                "$(location :%s)" % binary,
                p.filter,
            ] + ["'%s'" % e for e in p.expect],
            data = [":" + binary],
        )
        tests.append(test)
        pass_filter = getattr(p, "pass_filter", None)
        if pass_filter:
            pass_test = "plant%d_pass_test" % p.plant
            native.sh_test(
                name = pass_test,
                size = "medium",
                srcs = ["expect_pass.sh"],
                args = [
                    "$(location :%s)" % binary,
                    "'%s'" % pass_filter,
                    p.pass_levels,
                ],
                data = [":" + binary],
            )
            tests.append(pass_test)
    native.test_suite(
        name = name,
        tests = tests,
    )
