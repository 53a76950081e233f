// Contract 7.8 (workspace): the size functions follow section 6 (every slot but CUB's exactly, CUB's slot
// at least 1 MiB and 128-aligned; the exact CUB query is a GPU stage check in differential_stages_test),
// a workspace sized for (B, maxS) serves every S <= maxS with the same results, and an undersized or
// misaligned workspace, non-positive sizes and invalid pool states throw std::runtime_error.
#include <stdexcept>

#include "properties/cases.h"

namespace qsa {
namespace prop {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// "" when fn() throws std::runtime_error whose message contains every string of `mentions`.
template <typename Fn>
std::string throwsRuntimeError(Fn fn, std::vector<std::string> const& mentions, std::string const& what) {
    try {
        fn();
    } catch (std::runtime_error const& e) {
        for (std::string const& m : mentions) {
            if (std::string(e.what()).find(m) == std::string::npos) {
                return what + ": message \"" + e.what() + "\" does not mention " + m;
            }
        }
        return "";
    } catch (std::exception const& e) {
        return what + ": threw a non-runtime_error: " + e.what();
    }
    return what + ": did not throw";
}

QSA_PROP(Workspace, SizesFollowSection6, 500) {
    int32_t const B = *flatRange<int32_t>(1, 65);
    int32_t const S = *weightedGen<int32_t>(
        {{3, flatRange<int32_t>(1, 9000)}, {1, pick<int32_t>(1, 4, 5, 2048, 2049, 4096, 8192, 16384, 65536)}});
    size_t const size = prefillWorkspaceSize(B, S);
    size_t const nonCub = ref::prefillWorkspaceBytes(B, S, 0) - kMiB; // every slot but CUB's
    RC_LOG() << "B=" << B << " S=" << S << " size=" << size << " non-CUB slots=" << nonCub << "\n";
    RC_ASSERT(size >= nonCub + kMiB);
    RC_ASSERT((size - nonCub) % 128u == 0u); // unsigned throughout (RapidCheck compares the captured operands)
    if (!implOnGpu())
        RC_ASSERT(size == ref::prefillWorkspaceBytes(B, S, 0)); // no CUB: the 1 MiB floor
    int32_t const maxBlocks = *flatRange<int32_t>(1, 5000);
    RC_ASSERT(decodeWorkspaceSize(B, maxBlocks) == ref::decodeWorkspaceBytes(B, maxBlocks));
    // The bound covers every S' <= S.
    int32_t const smaller = *flatRange<int32_t>(1, S + 1);
    RC_ASSERT(prefillWorkspaceSize(B, smaller) <= size);
}

QSA_PROP(Workspace, SizeFunctionsRejectNonPositive, 20) {
    int32_t const bad = *pick<int32_t>(0, -1, INT32_MIN);
    int32_t const good = *flatRange<int32_t>(1, 100);
    QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { prefillWorkspaceSize(bad, good); }, {}, "prefill size, batchSize"));
    QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { prefillWorkspaceSize(good, bad); }, {}, "prefill size, maxSeqLen"));
    QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { decodeWorkspaceSize(bad, good); }, {}, "decode size, batchSize"));
    QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { decodeWorkspaceSize(good, bad); }, {}, "decode size, maxBlocks"));
}

// A workspace sized for (B, maxS) runs S <= maxS with the results of an exactly sized one.
QSA_PROP(Workspace, LargerWorkspaceServesSmallerS, 20) {
    PrefillSpec const spec = *genPrefillSpec(SpecOptions{});
    ref::PrefillCase const c = toCase(spec);
    int32_t const maxS = spec.S + *pick<int32_t>(0, 1, 3, 100, 300);
    RunOptions big;
    big.workspaceBytes = prefillWorkspaceSize(spec.B, maxS) + *pick<size_t>(0, 1, 128, 4096);
    Capture cap("workspace", describe(spec), c);
    QSA_REQUIRE_EMPTY(
        diffOutIdx(runImplPrefill(c, big).outIdx, runImplPrefill(c).outIdx, c.seqLen, "big vs exact workspace"));
}

// Levels (contract section 8): that an undersized workspace throws std::runtime_error is core; that its
// message names the public function and both sizes, and that a misaligned one throws, are hardened.
enum class WsCheck { kUndersized, kUndersizedMessage, kMisaligned };

// The checks `which` selects on one pipeline: run(options) with `given` < `need` workspace bytes (the size
// function's answer) throws, its message naming `fn` and both sizes where asked; every misalignment throws.
template <typename Run>
void pipelineThrows(WsCheck which, char const* fn, char const* pipeline, Run run, size_t given, size_t need,
                    std::vector<size_t> const& misalignments) {
    if (which != WsCheck::kMisaligned) {
        RunOptions under;
        under.workspaceBytes = given;
        std::vector<std::string> const mentions =
            which == WsCheck::kUndersizedMessage
                ? std::vector<std::string>{fn, std::to_string(given), std::to_string(need)}
                : std::vector<std::string>{};
        QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { run(under); }, mentions, std::string("undersized ") + pipeline));
    }
    for (size_t m : which == WsCheck::kMisaligned ? misalignments : std::vector<size_t>{}) {
        RunOptions misaligned;
        misaligned.workspaceMisalign = m;
        QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { run(misaligned); }, {fn},
                                             std::string("misaligned ") + pipeline + " workspace (+" +
                                                 std::to_string(m) + " bytes)"));
    }
}

void workspaceThrows(WsCheck which) {
    PrefillSpec spec = *genPrefillSpec(SpecOptions{});
    ref::PrefillCase const c = toCase(spec);
    size_t const need = prefillWorkspaceSize(c.batchSize, c.seqLen);
    size_t const given =
        need - *weightedGen<size_t>({{3, pick<size_t>(1, 2, 127, 128)}, {1, flatRange<size_t>(1, need)}});
    // Every power-of-two misalignment below 128 (an alignment check modulo 64 or 16 passes all but a few),
    // plus one drawn at random.
    std::vector<size_t> misalignments = {64, 32, 16, 8, 4, 2, 1, 96};
    misalignments.push_back(*flatRange<size_t>(1, 128));
    RC_LOG() << describe(spec) << " need=" << need << " given=" << given << "\n";
    pipelineThrows(
        which, "runQsaIndexerPrefill", "prefill", [&](RunOptions const& o) { runImplPrefill(c, o); }, given, need,
        misalignments);

    DecodeChainSpec const ds = *genDecodeChainSpec(40, 1, false, false);
    Chain ch = makeChain(ds);
    ref::DecodeCase& d = ch.steps[0];
    d.pool.data = ch.prefillL.pool.data;
    size_t const dneed = decodeWorkspaceSize(d.batchSize, d.maxBlocks);
    size_t const dgiven = dneed - *flatRange<size_t>(1, dneed);
    pipelineThrows(
        which, "runQsaIndexerDecode", "decode", [&](RunOptions const& o) { runImplDecode(d, o); }, dgiven, dneed,
        misalignments);
}

QSA_PROP(Workspace, UndersizedThrows, 30) {
    workspaceThrows(WsCheck::kUndersized);
}

QSA_PROP(Workspace, UndersizedMessageNamesFunctionAndSizes, 30) {
    workspaceThrows(WsCheck::kUndersizedMessage);
}

QSA_PROP(Workspace, MisalignedThrows, 30) {
    workspaceThrows(WsCheck::kMisaligned);
}

QSA_PROP(Workspace, InvalidPoolStatesThrow, 30) {
    DecodeChainSpec const ds = *genDecodeChainSpec(40, 1, false, false);
    Chain ch = makeChain(ds);
    ref::DecodeCase d = ch.steps[0];
    d.pool.data = ch.prefillL.pool.data;
    ref::PrefillCase p = ch.prefillL;
    int const which = *flatRange(0, 5);
    auto breakDims = [which](ref::PoolDims& dims) {
        switch (which) {
        case 0:
            dims.numPages = *pick<int32_t>(0, -1);
            break;
        case 1:
            dims.numKVHeads = *pick<int32_t>(0, -3);
            break;
        case 2:
            dims.headSize = *pick<int32_t>(0, -128);
            break;
        case 3:
            dims.poolHeadDim = dims.headSize + *flatRange<int32_t>(0, 128);
            break;
        default:
            dims.maxPagesPerSeq = *pick<int32_t>(0, -1);
            break;
        }
    };
    breakDims(d.pool.dims);
    p.pool.dims = d.pool.dims;
    RC_LOG() << "broken pool dims case " << which << "\n";
    QSA_REQUIRE_EMPTY(throwsRuntimeError([&] { runImplDecode(d); }, {"runQsaIndexerDecode"}, "decode, invalid pool"));
    QSA_REQUIRE_EMPTY(
        throwsRuntimeError([&] { runImplPrefill(p); }, {"runQsaIndexerPrefill"}, "prefill, invalid pool"));
}

} // namespace
} // namespace prop
} // namespace qsa
