// The C++ side of test_replay.py's "the implementation throws" cases: `qsa replay` only runs the reference
// (or the GPU), so this prints what fixtures/replay.cc's replay() gives for an implementation that throws
// MESSAGE on fixture DIR, judged under QSA_LEVELS / QSA_PROFILE: the result fields, the
// QSA_NOT_JUDGED / QSA_CHECK_FAILED lines and the report.
//   replay_throw_probe DIR MESSAGE
#include <iostream>
#include <stdexcept>
#include <string>

#include "fixtures/fixture.h"
#include "fixtures/replay.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: replay_throw_probe DIR MESSAGE\n";
        return 2;
    }
    using namespace qsa::fixtures;
    try {
        std::string const message = argv[2];
        Fixture const f = readFixture(argv[1]);
        ReplayResult const r = replay(f, [&](Fixture const&) -> Outputs { throw std::runtime_error(message); });
        std::cout << "pass=" << r.pass << " anyJudged=" << r.anyJudged << " inputLevel=" << r.inputLevel
                  << " contract=" << r.contract << "\nsummary: " << r.summary << "\n";
        for (std::string const& line : r.lines(argv[1]))
            std::cout << "  " << line << "\n";
        std::cout << r.report;
    } catch (std::exception const& e) {
        std::cerr << "replay_throw_probe: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
