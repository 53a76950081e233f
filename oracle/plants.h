// Planted bugs of the oracle: each one a deliberate contract violation, compiled in only with
// -DQSA_PLANT=n (all off by default: QSA_PLANT is 0 in //oracle:oracle, the CPU implementation under test
// of every property). oracle/plant_tests.bzl builds one more copy of the oracle per plant and a test that
// passes only when the named property FAILS with the expected message, so CI keeps the evidence that each
// property can fail. The plant sites are marked "Plant n" in the sources.
//   1 differential     K2 rounds positive finite logits of odd blocks one ulp lower
//   2 layout           rows with (t + 1) % 4 == 3 get the future token t + 1 as a 4th tail entry
//   3 padding          padded prefill rows are left unwritten
//   4 determinism      K2 leaves invisible entries unwritten (the sort reads what the workspace held)
//   5 batch invariance K4 treats rows t >= ctx[0] of every later sequence as padding
//   6 prefill/decode   a completing decode step compresses K-tail row 4g + 1 in place of 4g
//   7 pool hygiene     the raw-k tail scatter also writes head numKVHeads - 1
//   8 workspace        workspace alignment checked modulo 64
//   9 differential     K4 of every chunk after the first expands one row early (chunk row offset)
//  10 differential     decode B1: the q rope at pos = ctx instead of ctx - 1 (rows below the batch's max ctx)
//  11 differential     decode B2: the four head terms summed in the order 3, 2, 1, 0
//  12 differential     K1a: padded qNormed rows left unwritten instead of exact zeros
//  13 differential     K1b: kbar of invalid blocks left unwritten instead of exact zeros
//  14 pool hygiene     the raw-k tail scatter checks K ids against the lower bound only (kernel mutant 36)
//  15 decode stages    B1: the q sum of squares' fma chain over x[4l+3] .. x[4l] (kernel mutant 31)
//  16 differential     K1b: the block sum as (k0 + k1) + (k2 + k3) (kernel mutant 8)
//  17 levels           decode B1 skips (does not write) a completing block whose K page is unusable: legal at
//                      core (the +0.0 reads are hardened, contract section 8), caught only by the hardened
//                      variants (the seed system's behaviour on PoolHygiene.DecodeTouchesOnlyContractCells)
//  18 decode stages    B1 zeroes an invalid row's qNormed as x - x of its input (+0.0 for finite x, NaN for NaN
//                      and Inf): caught only when an invalid row's input is NaN / Inf (the hardened stage cases)
// (10-13 change no outIdx and no pool cell: only the workspace read-back of section 6 sees them.)
// Semantic plants that profile `fast` must catch (CONTRACT.md section 9: numerics bugs prefill and decode
// share), compiled into //oracle:oracle_fast as oracle_fast_plant<n> (plant_tests.bzl FAST_PLANTS); 22-24 live
// in fast.cc (the fast arithmetic only), 25-26 in the pipelines (any copy):
//  22 fast differential normRope (K1a, K1b, B1): gamma used as the gain, w in place of 1 + w
//  23 fast differential normRope (K1a, K1b, B1): the rope's sin with its sign flipped
//  24 fast differential K2 / B2: q head 3 dropped (read as zeros)
//  25 fast differential K1b and B1's block completion: the kbar rope at position 4g + 3 instead of 4g
//  26 fast differential decode B2: blocks 4g >= 128 read the V-tail of token 4g - 128 (the wrong page)
//  27 fast differential prefill sort: equal logits by descending id (kernel mutant 21: the selection rule,
//                      exact under `fast`, decided on exact ties such as relu's +0.0)
#pragma once

#ifndef QSA_PLANT
#define QSA_PLANT 0
#endif

namespace qsa {
namespace oracle {

constexpr int kPlant = QSA_PLANT;
static_assert(kPlant >= 0 && kPlant <= 27, "QSA_PLANT: 0 (none) or a plant of oracle/plants.h");

} // namespace oracle
} // namespace qsa
