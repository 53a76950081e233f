// Child processes of certify (see certify_plan.h): each launched, timed out and judged by tools/engine.sh, the
// launcher run_all.sh and run_mutants.sh source, run as `bash engine.sh run [--declared ENV PATH] LOG TIMEOUT DIR
// KEY=VALUE... -- EXE ARGS...`. certify forks and execs bash with its own environment less kUnset,
// reads the child's lines from LOG as it grows, and maps the engine's outcome line ("engine: outcome=... rc=...")
// to a ChildResult. It kills nothing itself but the engine, and that only as a last resort: when the engine has not
// ended 60 s after its own timeout and SIGKILL (a child stuck in the driver), so that certify still writes its
// certificate.
#include "tools/certify_plan.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>

extern char** environ;

namespace qsa {
namespace certify {

namespace fs = std::filesystem;

std::string ChildResult::describe() const {
    if (!started) {
        return "did not start: " + error;
    }
    if (timedOut) {
        return "timed out (killed; engine: " + (outcome.empty() ? std::string("no outcome") : outcome) + ")";
    }
    if (signal != 0) {
        return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + "; engine: " + outcome + ")";
    }
    return "exit " + std::to_string(exitCode);
}

namespace {

// Environment variables of a `bazel test` / bundle run that must not leak into a child.
std::vector<std::string> const kUnset = {"CUDA_VISIBLE_DEVICES",
                                         "RC_PARAMS",
                                         "TEST_UNDECLARED_OUTPUTS_DIR",
                                         "TEST_TMPDIR",
                                         "TEST_SHARD_INDEX",
                                         "TEST_TOTAL_SHARDS",
                                         "TEST_SHARD_STATUS_FILE",
                                         "GTEST_SHARD_INDEX",
                                         "GTEST_TOTAL_SHARDS",
                                         "GTEST_OUTPUT",
                                         "GTEST_FILTER",
                                         "XML_OUTPUT_FILE",
                                         "TEST_TARGET",
                                         "TEST_PREMATURE_EXIT_FILE",
                                         "TEST_SRCDIR",
                                         "TEST_WORKSPACE",
                                         "RUNFILES_DIR",
                                         "RUNFILES_MANIFEST_FILE",
                                         "JAVA_RUNFILES"};

// bash, from certify's PATH (execve takes no search), else /bin/bash.
std::string bashPath() {
    static std::string const path = [] {
        std::string const dirs = envOr("PATH", "/usr/bin:/bin");
        size_t b = 0;
        while (b <= dirs.size()) {
            size_t const e = std::min(dirs.find(':', b), dirs.size());
            std::string const p = (e > b ? dirs.substr(b, e - b) : std::string(".")) + "/bash";
            if (access(p.c_str(), X_OK) == 0) {
                return p;
            }
            b = e + 1;
        }
        return std::string("/bin/bash");
    }();
    return path;
}

// "engine: outcome=crash(SEGV) rc=139 ms=12" -> outcome, rc.
bool parseOutcome(std::string const& text, std::string& outcome, int& rc) {
    static std::regex const re("(^|\n)engine: outcome=(\\S+) rc=([0-9]+) ms=[0-9]+");
    std::smatch m;
    if (!std::regex_search(text, m, re)) {
        return false;
    }
    outcome = m[2].str();
    rc = std::stoi(m[3].str());
    return true;
}

} // namespace

ChildResult runChild(ChildSpec const& spec, std::function<void(std::string const&)> const& onLine) {
    ChildResult r;
    if (spec.engine.empty()) {
        r.error = "tools/engine.sh not found (--bin-dir/tools, runfiles or the bundle root)";
        return r;
    }
    // The log: the caller's, or a temporary one (removed with its .outputs directory afterwards). Created empty
    // and opened for reading before the engine starts: the engine truncates the same file, certify reads it as it
    // grows.
    std::string log = spec.logPath;
    bool const tempLog = log.empty();
    if (tempLog) {
        std::string tmpl = (fs::path(envOr("TMPDIR", "/tmp")) / "certify-child-XXXXXX.log").string();
        int const fd = mkstemps(tmpl.data(), 4);
        if (fd < 0) {
            r.error = "cannot create a temporary log " + tmpl + ": " + std::strerror(errno);
            return r;
        }
        close(fd);
        log = tmpl;
    } else if (FILE* f = std::fopen(log.c_str(), "w")) {
        std::fclose(f);
    }
    int const logFd = open(log.c_str(), O_RDONLY | O_CLOEXEC);
    if (logFd < 0) {
        r.error = "cannot open the log " + log + ": " + std::strerror(errno);
        return r;
    }
    auto removeTemp = [&] {
        if (tempLog) {
            std::error_code ec;
            fs::remove(log, ec);
            fs::remove_all(log.substr(0, log.size() - 4) + ".outputs", ec);
        }
    };

    // Everything the engine needs is built before fork: after it only async-signal-safe calls are made.
    std::vector<std::string> envStrings;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string const kv = *e;
        size_t const eq = kv.find('=');
        if (eq != std::string::npos && std::find(kUnset.begin(), kUnset.end(), kv.substr(0, eq)) == kUnset.end()) {
            envStrings.push_back(kv);
        }
    }
    std::vector<char*> envp;
    for (std::string& s : envStrings) {
        envp.push_back(s.data());
    }
    envp.push_back(nullptr);
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%.3f", spec.timeoutSeconds);
    std::vector<std::string> argStrings = {bashPath(), spec.engine.string(), "run"};
    if (!spec.declaredEnvFile.empty()) {
        argStrings.insert(argStrings.end(), {"--declared", spec.declaredEnvFile, spec.declaredEnvPath});
    }
    argStrings.insert(argStrings.end(), {log, limit, spec.runfiles});
    for (auto const& [k, v] : spec.env) {
        argStrings.push_back(k + "=" + v);
    }
    argStrings.push_back("--");
    argStrings.push_back(spec.exe);
    argStrings.insert(argStrings.end(), spec.args.begin(), spec.args.end());
    std::vector<char*> argv;
    for (std::string& s : argStrings) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        r.error = std::string("pipe: ") + std::strerror(errno);
        close(logFd);
        removeTemp();
        return r;
    }
    pid_t const pid = fork();
    if (pid < 0) {
        r.error = std::string("fork: ") + std::strerror(errno);
        close(fds[0]);
        close(fds[1]);
        close(logFd);
        removeTemp();
        return r;
    }
    if (pid == 0) {
        // The engine in its own process group (the last resort below kills it); killed if certify dies.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int const devNull = open("/dev/null", O_RDONLY);
        if (devNull > 0) {
            dup2(devNull, 0);
            close(devNull);
        }
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execve(argv[0], argv.data(), envp.data());
        char const msg[] = "certify: execve of bash failed\n";
        ssize_t ignored = write(2, msg, sizeof(msg) - 1);
        (void)ignored;
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    r.started = true;
    // The engine's own output (its outcome line, or why it could not run) from the pipe; the child's from the log.
    std::string engineOut, pending;
    char buf[65536];
    auto readLog = [&] {
        for (;;) {
            ssize_t const n = read(logFd, buf, sizeof(buf));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return;
            }
            r.output.append(buf, static_cast<size_t>(n));
            pending.append(buf, static_cast<size_t>(n));
            size_t nl;
            while ((nl = pending.find('\n')) != std::string::npos) {
                onLine(pending.substr(0, nl));
                pending.erase(0, nl + 1);
            }
        }
    };
    // The engine sends SIGTERM at the timeout and SIGKILL 10 s later; 60 s more and certify gives up on it.
    auto const lastResort = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(static_cast<long long>((spec.timeoutSeconds + 70) * 1e3));
    bool abandoned = false;
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        int const pr = poll(&p, 1, 200);
        readLog();
        if (pr < 0 && errno != EINTR) {
            break;
        }
        if (pr > 0) {
            ssize_t const n = read(fds[0], buf, sizeof(buf));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break; // EOF: the engine ended
            }
            engineOut.append(buf, static_cast<size_t>(n));
        }
        if (!abandoned && std::chrono::steady_clock::now() > lastResort) {
            abandoned = true;
            kill(-pid, SIGKILL);
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    readLog();
    if (!pending.empty()) {
        onLine(pending);
    }
    close(logFd);
    removeTemp();

    int rc = -1;
    if (abandoned) {
        r.timedOut = true;
        r.error = "tools/engine.sh did not end 60 s after killing the child; killed";
    } else if (!parseOutcome(engineOut, r.outcome, rc)) {
        r.started = false;
        r.error = "tools/engine.sh gave no outcome (" +
                  (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed")) +
                  "): " + engineOut.substr(0, 2000);
    } else if (r.outcome == "timeout") {
        r.timedOut = true;
    } else if (r.outcome.rfind("crash", 0) == 0) {
        r.signal = rc - 128;
    } else {
        r.exitCode = rc;
        if (rc == 126 || rc == 127) {
            r.error = "could not execute " + spec.exe;
        }
    }
    return r;
}

} // namespace certify
} // namespace qsa
