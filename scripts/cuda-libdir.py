#!/usr/bin/env python3
"""Prints the folder of the CUDA runtime libraries that the given nvcc links against.

nvcc may be a wrapper script outside the toolkit (e.g. /usr/local/bin/nvcc), so the folder is
read from nvcc's own dry run (its LIBRARIES line) rather than guessed from nvcc's location."""
import os
import re
import subprocess
import sys

nvcc = sys.argv[1]
dry = subprocess.run([nvcc, '--dryrun', '-x', 'cu', '-c', os.devnull, '-o', os.devnull],
                     capture_output=True, text=True)
for line in (dry.stdout + dry.stderr).splitlines():
    if 'LIBRARIES=' in line:
        for folder in re.findall(r'-L"?([^"\s]+)"?', line):
            folder = os.path.realpath(folder)
            if not folder.endswith('stubs') and os.path.exists(os.path.join(folder, 'libcudart.so')):
                print(folder)
                sys.exit(0)
sys.exit('cuda-libdir.py: no libcudart.so in the folders `%s --dryrun` links against' % nvcc)
