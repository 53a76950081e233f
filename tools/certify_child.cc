// Child processes of certify (see certify_plan.h): fork + execve with a prepared environment, output through a pipe.
#include "tools/certify_plan.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

extern char** environ;

namespace qsa {
namespace certify {

std::string ChildResult::describe() const {
    if (!started) {
        return "did not start: " + error;
    }
    if (timedOut) {
        return "timed out (killed)";
    }
    if (signal != 0) {
        return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    }
    return "exit " + std::to_string(exitCode);
}

ChildResult runChild(ChildSpec const& spec, std::function<void(std::string const&)> const& onLine) {
    ChildResult r;
    // Everything the child needs is built before fork: after it only async-signal-safe calls are made.
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string const kv = *e;
        size_t const eq = kv.find('=');
        if (eq != std::string::npos) {
            env[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
    }
    for (std::string const& k : spec.unset) {
        env.erase(k);
    }
    for (auto const& [k, v] : spec.env) {
        env[k] = v;
    }
    std::vector<std::string> envStrings;
    for (auto const& [k, v] : env) {
        envStrings.push_back(k + "=" + v);
    }
    std::vector<char*> envp;
    for (std::string& s : envStrings) {
        envp.push_back(s.data());
    }
    envp.push_back(nullptr);
    std::vector<std::string> argStrings = {spec.exe};
    argStrings.insert(argStrings.end(), spec.args.begin(), spec.args.end());
    std::vector<char*> argv;
    for (std::string& s : argStrings) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        r.error = std::string("pipe: ") + std::strerror(errno);
        return r;
    }
    pid_t const pid = fork();
    if (pid < 0) {
        r.error = std::string("fork: ") + std::strerror(errno);
        close(fds[0]);
        close(fds[1]);
        return r;
    }
    if (pid == 0) {
        // Its own process group, so that a timeout kills whatever it started too; killed if certify dies.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
            _exit(126);
        }
        execve(argv[0], argv.data(), envp.data());
        char const msg[] = "certify: execve failed\n";
        ssize_t ignored = write(2, msg, sizeof(msg) - 1);
        (void)ignored;
        _exit(127);
    }
    setpgid(pid, pid); // as the child does: whichever runs first, the group exists before a timeout
    close(fds[1]);
    r.started = true;
    std::ofstream log;
    if (!spec.logPath.empty()) {
        log.open(spec.logPath, std::ios::binary);
    }
    auto const deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(spec.timeoutSeconds * 1e3));
    std::string pending;
    char buf[65536];
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        int const pr = poll(&p, 1, 500);
        if (pr < 0 && errno != EINTR) {
            break;
        }
        if (pr > 0) {
            ssize_t const n = read(fds[0], buf, sizeof(buf));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break; // EOF: the child closed its output (exited)
            }
            r.output.append(buf, static_cast<size_t>(n));
            if (log) {
                log.write(buf, n);
                log.flush();
            }
            pending.append(buf, static_cast<size_t>(n));
            size_t nl;
            while ((nl = pending.find('\n')) != std::string::npos) {
                onLine(pending.substr(0, nl));
                pending.erase(0, nl + 1);
            }
        }
        if (!r.timedOut && std::chrono::steady_clock::now() > deadline) {
            r.timedOut = true;
            kill(-pid, SIGKILL);
        }
    }
    if (!pending.empty()) {
        onLine(pending);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        r.exitCode = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r.signal = WTERMSIG(status);
    }
    if (r.exitCode == 127 || r.exitCode == 126) {
        r.error = "could not execute " + spec.exe + (r.exitCode == 126 ? " (chdir " + spec.cwd + " failed)" : "");
    }
    return r;
}

} // namespace certify
} // namespace qsa
