"""The planted bugs of oracle/plants.h re-run as expected-failure tests.

For each entry of PLANTS: a copy of the oracle built with -DQSA_PLANT=<plant>, the property binary of
//properties:<binary>_lib linked against it, and a test that passes ONLY when that binary, run with
--gtest_filter=<filter>, fails and its output contains <expect>. A plant with pass_filter / pass_levels (a plant
that is legal at those levels, contract section 8) also gets plant<n>_pass_test: the same binary, run with
--gtest_filter=<pass_filter> and QSA_LEVELS=<pass_levels>, must PASS (expect_pass.sh). FAST_PLANTS: the same on
copies of //oracle:oracle_fast (-DQSA_ORACLE_FAST=1), run under QSA_PROFILE=fast; fast_plants_test shows today
that each is compiled in and changes what its stage outputs.
"""

# The stages with plant sites (compiled once more per plant, with -DQSA_PLANT=n); fast.cc is the profile `fast`
# arithmetic (CONTRACT.md section 9.1), called only when QSA_ORACLE_FAST=1 ...
ORACLE_PLANTED_SRCS = [
    "api.cc",
    "decode.cc",
    "fast.cc",
    "prefill.cc",
]

ORACLE_PLANTED_HDRS = [
    "fast.h",
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
    struct(plant = 18, binary = "decode_stages_test", filter = "DecodeStages.B1QPrepHostilePoolMatchesReference", expect = ["B1 qNormed row b="]),
]

# The profile `fast` checks that must catch each semantic plant of contract section 9 (plants.h 22-26), run under
# QSA_PROFILE=fast against oracle_fast_plant<n>; each fast_plant<n>_test is one of plant_tests.
# changes: the fast_digest observable the plant must change (fast_plants_test, which runs today).
FAST_PLANTS = [
    struct(plant = 22, binary = "decode_stages_test", filter = "DecodeStages.B1QPrepWithinFastEnclosure", expect = ["QSA_CHECK_FAILED DecodeStages.B1QPrepWithinFastEnclosure"], changes = "decode.B1.qNormed"),
    struct(plant = 23, binary = "differential_test", filter = "Differential.PrefillWithinFastEnclosure", expect = ["QSA_CHECK_FAILED Differential.PrefillWithinFastEnclosure"], changes = "prefill.K1a.qNormed"),
    struct(plant = 24, binary = "decode_stages_test", filter = "DecodeStages.B2LogitsWithinFastEnclosure", expect = ["QSA_CHECK_FAILED DecodeStages.B2LogitsWithinFastEnclosure"], changes = "decode.B2.logits"),
    struct(plant = 25, binary = "differential_test", filter = "Differential.PrefillWithinFastEnclosure", expect = ["QSA_CHECK_FAILED Differential.PrefillWithinFastEnclosure"], changes = "prefill.K1b.kbar"),
    struct(plant = 26, binary = "differential_test", filter = "Differential.DecodeStepsWithinFastEnclosure", expect = ["QSA_CHECK_FAILED Differential.DecodeStepsWithinFastEnclosure"], changes = "decode.B2.logits"),
    struct(plant = 27, binary = "differential_test", filter = "Differential.PrefillWithinFastEnclosure", expect = ["QSA_CHECK_FAILED Differential.PrefillWithinFastEnclosure"], changes = "prefill.outIdx"),
]

# Which planted sources hold which plant sites (`kPlant == n` / `kPlant != n`): a plant copy compiles only these
# with -DQSA_PLANT=n and links the plant-free objects of the others (one compile per file instead of four: the
# plant copies were 115 of the README command's CPU-seconds). //oracle:plant_sites_test keeps this table and
# the sources in agreement.
PLANT_SITES = {
    "api.cc": [8],
    "decode.cc": [6, 10, 11, 15, 17, 18, 25, 26],
    "fast.cc": [22, 23, 24],
    "prefill.cc": [1, 2, 3, 4, 5, 7, 9, 12, 13, 14, 16, 25, 27],
}

def _stage_library(name, src, plant, fast, testonly):
    native.cc_library(
        name = name,
        testonly = testonly,
        srcs = [src],
        hdrs = ORACLE_PLANTED_HDRS,
        copts = ORACLE_COPTS,
        local_defines = ["QSA_PLANT=%d" % plant] + (["QSA_ORACLE_FAST=1"] if fast else []),
        deps = [
            ":oracle_core",
            "//api:headers",
        ],
        alwayslink = True,  # defines the API the harness calls, whatever the static link order
    )

def oracle_copy(name, plant = 0, fast = False, testonly = False):
    """A copy of the oracle's planted stages: -DQSA_PLANT=plant, and the `fast` arithmetic when fast is set.

    The plant-free copies (plant 0: //oracle:oracle, //oracle:oracle_fast) declare one library per planted source,
    oracle_<ieee|fast>_<stem>; a plant copy compiles the sources PLANT_SITES lists for its plant and takes the
    others from those.

    Args:
      name: the cc_library.
      plant: the plants.h number compiled in (0: none).
      fast: compile with -DQSA_ORACLE_FAST=1 (contract section 9.1's arithmetic, fast.h).
      testonly: whether the copy is testonly (every planted copy is).
    """
    flavour = "fast" if fast else "ieee"
    parts = []
    for src in ORACLE_PLANTED_SRCS:
        stem = src.replace(".cc", "")
        if plant == 0:
            part = "oracle_%s_%s" % (flavour, stem)
            _stage_library(part, src, 0, fast, testonly)
        elif plant in PLANT_SITES[src]:
            part = "%s_%s" % (name, stem)
            _stage_library(part, src, plant, fast, testonly)
        else:
            part = "oracle_%s_%s" % (flavour, stem)
        parts.append(":" + part)
    native.cc_library(
        name = name,
        testonly = testonly,
        deps = parts,
        alwayslink = True,
    )

def _expect_failure_test(test, lib, p, env = None):
    """The property binary of p linked against lib, and the sh_test `test` passing only when it fails as p says."""
    binary = test.replace("_test", "") + "_" + p.binary
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
    _expect_test(test, "expect_failure.sh", binary, [p.filter] + ["'%s'" % e for e in p.expect], env)

def _expect_test(name, script, binary, args, env = None):
    """The sh_test `name`: script (expect_failure.sh / expect_pass.sh) on a property binary with args."""
    native.sh_test(
        name = name,
        size = "medium",
        srcs = [script],
        args = ["$(location :%s)" % binary] + args,
        data = [":" + binary],
        env = env,
    )

def _fast_digest(name, lib):
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = ["fast_digest.cc"],
        copts = ORACLE_COPTS,
        linkstatic = True,
        deps = [
            # do not sort: the property code before the backend and the implementation (as in //properties)
            "//properties:prop_lib",
            "//properties:harness_host",
            lib,
        ],
    )

def _fast_plants_test():
    """fast_plants_test: oracle_fast differs from oracle, and each FAST_PLANTS copy from oracle_fast (fast_digest)."""
    _fast_digest("fast_digest_ieee", ":oracle")
    _fast_digest("fast_digest_fast", ":oracle_fast")
    specs = []
    data = [
        ":fast_digest_fast",
        ":fast_digest_ieee",
    ]
    for p in FAST_PLANTS:
        binary = "fast_digest_plant%d" % p.plant
        _fast_digest(binary, ":oracle_fast_plant%d" % p.plant)
        specs.append("%d:$(location :%s):%s" % (p.plant, binary, p.changes))
        data.append(":" + binary)
    native.sh_test(
        name = "fast_plants_test",
        size = "medium",
        srcs = ["fast_plants_test.sh"],
        args = [
            "$(location :fast_digest_ieee)",
            "$(location :fast_digest_fast)",
        ] + specs,
        data = data,
    )

def plant_tests(name = "plant_tests"):
    """Declares the plant copies of the oracle, their property binaries and expected-failure tests.

    Per PLANTS entry oracle_plant<n> and plant<n>_test; per FAST_PLANTS entry oracle_fast_plant<n> and
    fast_plant<n>_test (QSA_PROFILE=fast); and fast_plants_test.

    Args:
      name: the test_suite of every plant test.
    """
    tests = []
    for p in PLANTS:
        lib = "oracle_plant%d" % p.plant
        oracle_copy(lib, plant = p.plant, testonly = True)
        test = "plant%d_test" % p.plant
        _expect_failure_test(test, lib, p)
        tests.append(test)
        binary = "plant%d_%s" % (p.plant, p.binary)  # the binary _expect_failure_test declared
        pass_filter = getattr(p, "pass_filter", None)
        if pass_filter:
            pass_test = "plant%d_pass_test" % p.plant
            _expect_test(pass_test, "expect_pass.sh", binary, ["'%s'" % pass_filter, p.pass_levels])
            tests.append(pass_test)
    for p in FAST_PLANTS:
        lib = "oracle_fast_plant%d" % p.plant
        oracle_copy(lib, plant = p.plant, fast = True, testonly = True)
        test = "fast_plant%d_test" % p.plant
        _expect_failure_test(test, lib, p, env = {"QSA_PROFILE": "fast"})
        tests.append(test)
    _fast_plants_test()
    tests.append("fast_plants_test")
    native.test_suite(
        name = name,
        tests = tests,
    )
