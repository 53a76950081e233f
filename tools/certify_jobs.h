// certify's jobs (//tools:certify): each runs one child process pinned to its GPU (CUDA_VISIBLE_DEVICES), with
// the environment of a `bazel test` run of its own (runfiles, undeclared-outputs and temp directories, gtest JSON
// output, RC_PARAMS with the property's fixed seed, QSA_BUDGET_SCALE), and turns what the child left into one
// JSON result (a leaf of the certificate: verdict, cases run, failures, coverage lines, captured fixtures) and
// one event line of the progress display. The queues that call them: certify_schedule.h.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>

#include "checks/levels.h"
#include "tools/certify_core.h"
#include "tools/certify_plan.h"
#include "tools/certify_schedule.h"

namespace qsa {
namespace certify {

// One property of a contract binary: --gtest_filter=<id>, its RC_PARAMS; PASS only when the child exited 0 and
// its gtest JSON has the property passed.
nlohmann::json runProperty(Layout const& l, ContractPlan const& c, PropertyPlan const& p, GpuRun& run, Options const& o,
                           Progress& progress);

// A whole gtest binary as one child; every test becomes a check with its registry level/profile (the fixture
// replay's tests name their failed checks in QSA_CHECK_FAILED lines).
nlohmann::json runSuite(Layout const& l, SuitePlan const& s, GpuRun& run, Options const& o,
                        checks::Selection const& sel, Progress& progress);

// tools/exhaustive_primitives with `threads` CPU threads (--simulate in a CPU dry run); its progress lines feed
// progress.exhaustiveDone[slot]. FAIL on any mismatch, a child error, or a result from another GPU.
nlohmann::json runExhaustive(Layout const& l, GpuRun& run, Options const& o, int threads, Progress& progress,
                             size_t slot);

} // namespace certify
} // namespace qsa
