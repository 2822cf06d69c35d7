// Running another program and collecting what it prints: the benchmark driver
// runs each measurement as a worker process (see worker.h).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tessel::bench {

struct ProcessResult {
  int status = -1;  // exit status; 128 + signal when killed; 127 when it could not start
  std::string out, err;
};

// Runs `argv` (argv[0] is the executable's path, no PATH search) with the
// current environment plus `env` (overriding), waits for it, and returns its
// exit status, stdout and stderr.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {});

// stdout of `sh -c command` ("" when it fails): for small tool queries such as
// sha256sum. The caller quotes arguments with shell_quote.
std::string shell_output(const std::string& command);
std::string shell_quote(const std::string& s);

// The path of the running executable (/proc/self/exe): workers are this program.
std::string self_executable();

// argv as a shell command line, "tessel" first, quoted where needed: what results
// files record as the command that made them.
std::string quoted_command(int argc, char** argv);

}  // namespace tessel::bench
