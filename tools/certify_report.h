// certify's certificate (//tools:certify): every GPU's results (certify_schedule.h) with the build (compiled SASS
// and PTX, CUDA toolkit), the CUDA runtime and driver, the git commit and the budget, the verdicts per level and
// profile (contract section 8: certify_core.h computeVerdicts) and the compute-sanitizer part
// (certify_sanitize.h); written as certificate.json and certificate.md, and the verdict printed.
#pragma once

#include <string>
#include <vector>

#include "tools/certify_core.h"
#include "tools/certify_plan.h"
#include "tools/certify_sanitize.h"
#include "tools/certify_schedule.h"

namespace qsa {
namespace certify {

// "2026-12-01T21:16:42Z": now, UTC.
std::string utcNow();

// Builds the certificate of `runs` (started at `started` / `start`), runs the sanitizer part (not in a CPU dry
// run), writes plan.outDir/certificate.json and certificate.md and prints the stage-tests line and the verdict.
// Returns certify's exit code: 0 PASS, 1 FAIL.
int writeCertificate(Options const& o, sanitize::Options const& sanitizeOpts, Plan const& plan,
                     std::vector<GpuRun>& runs, std::string const& started, Clock::time_point start);

} // namespace certify
} // namespace qsa
