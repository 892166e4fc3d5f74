// lowerscope-runner: the worker process that runs compiled CPU kernels for lowerscope and
// lowerscope-cli, so that a kernel that crashes or hangs takes only this process down
// (core/exec/isolated_run.h). Started by them with posix_spawn, never by hand.
#include "exec/isolated_run.h"

int main(int argc, char** argv) { return ls::runner_main(argc, argv); }
