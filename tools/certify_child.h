// Child processes of certify: one property test binary or the exhaustive checks, pinned to one GPU through its
// environment, output streamed line by line to a log file and a callback, killed after a timeout.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qsa {
namespace certify {

struct ChildSpec {
    std::string exe;
    std::vector<std::string> args;          // argv[1..]
    std::map<std::string, std::string> env; // set (or override) these
    std::vector<std::string> unset;         // remove these from certify's environment
    std::string cwd;                        // "" keeps certify's
    std::string logPath;                    // "" writes no log
    double timeoutSeconds = 3600;
};

struct ChildResult {
    int exitCode = -1; // valid when !signaled && !timedOut && started
    int signal = 0;
    bool started = false;
    bool timedOut = false;
    std::string output; // everything the child printed (stdout and stderr, interleaved)
    std::string error;  // why it did not start
    bool ok() const { return started && !timedOut && signal == 0 && exitCode == 0; }
    std::string describe() const; // "exit 0", "exit 1", "killed by signal 11", "timed out after ...", ...
};

// Runs the child to completion. onLine gets every complete output line (without its newline).
ChildResult runChild(ChildSpec const& spec, std::function<void(std::string const&)> const& onLine);

} // namespace certify
} // namespace qsa
