// Case constructions shared by several properties (see cases.h).
#include "properties/cases.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "reference/stages.h"

namespace qsa {
namespace prop {

Chain makeChain(DecodeChainSpec const& s) {
    Chain ch;
    int32_t const maxL = *std::max_element(s.L.begin(), s.L.end());
    int32_t const total = maxL + s.steps;
    ref::HostPool pool = makePool(s.pool, s.act.dtype, s.B, total);
    auto prefill = [&](int32_t S, int32_t extra) {
        ref::PrefillCase c;
        c.dtype = s.act.dtype;
        c.batchSize = s.B;
        c.seqLen = S;
        c.indexQk.resize(size_t(s.B) * S * 640);
        for (int32_t b = 0; b < s.B; ++b) {
            c.contextLengths.push_back(s.L[b] + extra);
            for (int32_t t = 0; t < S; ++t) {
                fillTokenRow(s.act, sequenceSeed(s.act, b), t, &c.indexQk[(size_t(b) * S + t) * 640]);
            }
        }
        setActInputs(c, s.act, total);
        c.hasPool = true;
        c.pool = pool;
        return c;
    };
    ch.prefillL = prefill(std::max(1, maxL), 0);
    ch.prefillFull = prefill(total, s.steps);
    for (int32_t k = 0; k < s.steps; ++k) {
        ref::DecodeCase d;
        d.dtype = s.act.dtype;
        d.batchSize = s.B;
        // extraBlocks < 0: the floor boundary of contract section 5, maxBlocks = total / 4, so that the last
        // steps have ctx / 4 == maxBlocks < ceilDiv(ctx, 4) when total % 4 != 0 (valid, normal rows).
        d.maxBlocks = s.extraBlocks < 0 ? std::max(1, total / 4) : ceilDiv(total, 4) + s.extraBlocks;
        d.indexQk.resize(size_t(s.B) * 640);
        for (int32_t b = 0; b < s.B; ++b) {
            d.contextLengths.push_back(s.L[b] + k + 1);
            fillTokenRow(s.act, sequenceSeed(s.act, b), s.L[b] + k, &d.indexQk[size_t(b) * 640]);
        }
        setActInputs(d, s.act, total); // the inputs of prefillFull
        d.pool.dims = pool.dims;
        d.pool.pageTable = pool.pageTable;
        d.hasSplitCounters = s.splitCounters;
        if (s.splitCounters) {
            for (int32_t i = 0; i < s.B * pool.dims.numKVHeads; ++i)
                d.splitCounters.push_back(1000 + 7 * i + k);
        }
        ch.steps.push_back(std::move(d));
    }
    return ch;
}

std::vector<uint16_t> refPoolAfterPrefill(ref::PrefillCase const& c) {
    std::vector<uint16_t> pool = c.pool.data;
    int32_t const B = c.batchSize, S = c.seqLen, MB = ceilDiv(S, 4);
    std::vector<uint16_t> kbar(size_t(B) * MB * 128);
    ref::PoolView const view{pool.data(), c.pool.pageTable.data(), c.pool.dims};
    ref::kCompressPaged(c.dtype, kbar.data(), c.indexQk.data(), c.cosSin.data(), c.contextLengths.data(), c.wK.data(),
                        c.rmsEps, B, S, MB, 0, MB, 0, view);
    ref::rawKTailScatter(c.dtype, c.indexQk.data(), c.contextLengths.data(), B, S, view);
    return pool;
}

ref::PrefillCase subBatch(ref::PrefillCase const& c, std::vector<int32_t> const& seqs, int32_t newS,
                          ActSpec const& act) {
    ref::PrefillCase r = c;
    r.batchSize = int32_t(seqs.size());
    r.seqLen = newS;
    r.hasPool = false;
    r.pool = ref::HostPool{};
    r.contextLengths.clear();
    r.indexQk.assign(size_t(r.batchSize) * newS * 640, 0);
    for (size_t i = 0; i < seqs.size(); ++i) {
        int32_t const b = seqs[i];
        r.contextLengths.push_back(c.contextLengths[b]);
        for (int32_t t = 0; t < newS; ++t) {
            uint16_t* row = &r.indexQk[(i * newS + t) * 640];
            if (t < c.seqLen) {
                std::memcpy(row, &c.indexQk[(size_t(b) * c.seqLen + t) * 640], 640 * sizeof(uint16_t));
            } else {
                poisonRow(act.dtype, act.seed ^ (uint64_t(t) << 16) ^ i, row);
            }
        }
    }
    r.cosSin = makeCosSin(act.rope, newS);
    return r;
}

std::string diffLiveCells(ref::HostPool const& layout, std::vector<int32_t> const& totals,
                          std::vector<uint16_t> const& a, std::vector<uint16_t> const& b) {
    for (size_t s = 0; s < totals.size(); ++s) {
        int32_t const T = totals[s];
        auto cmp = [&](int64_t e, char const* what, int32_t index) -> std::string {
            for (int i = 0; e >= 0 && i < 128; ++i) {
                if (a[e + i] != b[e + i]) {
                    std::ostringstream os;
                    os << "sequence " << s << " (total " << T << "): " << what << " " << index << " column " << i
                       << " differs: decode chain 0x" << std::hex << a[e + i] << ", prefill 0x" << b[e + i];
                    return os.str();
                }
            }
            return "";
        };
        for (int32_t g = 0; 4 * g + 3 < T; ++g) {
            std::string m = cmp(usableTail(layout, int32_t(s), 1, 4 * g), "V-tail of block", g);
            if (!m.empty())
                return m;
        }
        for (int32_t t = T - T % 4; t < T; ++t) {
            std::string m = cmp(usableTail(layout, int32_t(s), 0, t), "K-tail of token", t);
            if (!m.empty())
                return m;
        }
    }
    return "";
}

} // namespace prop
} // namespace qsa
