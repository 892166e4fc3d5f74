// The sanitizer build's run-time options (LOWERSCOPE_FUZZ=ON, tools/test.sh's build-fuzz/): compiled
// into every program of that build (the tests, the app, the CLI, the kernel worker, the fuzz
// targets), so a test run by hand, a worker a test spawns and ctest all run under the same ones.
// The environment's ASAN_OPTIONS, LSAN_OPTIONS and UBSAN_OPTIONS still apply on top.
// Every option that hides something says what and why; nothing of ours is suppressed.

#define LS_SANITIZER_DEFAULT extern "C" __attribute__((visibility("default"), used, no_sanitize("address", "undefined")))

// allocator_may_return_null: an allocation too large for the machine (a hostile file's sizes) throws
// std::bad_alloc, as it does outside the sanitizer, instead of ASan stopping the program.
// detect_leaks=0: LeakSanitizer's tracer itself crashes at the exit of test_import ("Tracer caught
// signal 11 ... LeakSanitizer has encountered a fatal error", with the OpenMP and BLAS threads
// alive), failing a test that passed; leaks are not checked in this build (with ASAN_OPTIONS=detect_leaks=1 a run by hand still checks them).
LS_SANITIZER_DEFAULT const char* __asan_default_options() { return "allocator_may_return_null=1:detect_leaks=0"; }

LS_SANITIZER_DEFAULT const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

