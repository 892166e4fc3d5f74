// lowerscope-runner: the worker process that runs compiled kernels for lowerscope and
// lowerscope-cli, CPU (`--shm FD`) and CUDA (`--cuda --shm FD`: a GPU context of its own), so that
// a kernel that crashes, hangs or spoils its GPU context takes only this process down
// (core/exec/isolated_run.h). Started by them with posix_spawn, never by hand.
#include "exec/isolated_run.h"

int main(int argc, char** argv) { return ls::runner_main(argc, argv); }
