#!/usr/bin/env python3
"""How long the external C++ compiler takes on one generated kernel file, with the app's command and
variants of it (best of 6 each), and on an empty file (the compiler's floor):

    lowerscope-cli compile tests/data/models/softmax --external-compiler --no-reference --dump D
    python3 tools/bench/cxx_probe.py D/06_source.cpp
"""
import os, subprocess, sys, tempfile, time

src = os.path.abspath(sys.argv[1])
os.chdir(tempfile.mkdtemp())
O = "-O3 -march=native -fopenmp -fno-math-errno -fno-trapping-math -fno-builtin-sinf -fno-builtin-cosf -shared -fPIC"
open("empty.cpp", "w").write('extern "C" void f() {}\n')


def t(cmd):
    best = 9.0
    for _ in range(6):
        s = time.perf_counter()
        subprocess.run(cmd, shell=True, capture_output=True)
        best = min(best, time.perf_counter() - s)
    print(f"{best * 1e3:6.1f} ms  {cmd}")


t(f"cc -x c++ {O} -o a.so {src} -lmvec")  # the app's command for a model of one unit
t(f"cc -x c++ {O} -pipe -o a.so {src} -lmvec")
t(f"cc -x c++ {O.replace('-O3', '-O2')} -o a.so {src} -lmvec")
t(f"cc -x c++ {O} -c -o a.o {src}")
t(f"cc {O} -o a.so a.o -lmvec")
t(f"cc -x c++ {O} -o a.so empty.cpp -lmvec")
for extra in ["--param vect-epilogues-nomask=0", "-mprefer-vector-width=512", "-mprefer-vector-width=256",
              "--param vect-partial-vector-usage=0"]:
    t(f"cc -x c++ {O} {extra} -c -o a.o {src}")
