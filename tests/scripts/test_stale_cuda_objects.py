#!/usr/bin/env python3
"""scripts/stale-cuda-objects.py on a made-up build: a .cu whose header includes another header
(found through the file's own folder and through an -I folder), a .cu that includes nothing, a C++
entry that is never listed; by changed files, by --newer (mtimes), with --delete, and an object not
built yet."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "stale-cuda-objects.py")


class StaleCudaObjects(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        self.src = os.path.join(root, "src")
        self.inc = os.path.join(root, "include", "lib")
        self.build = os.path.join(root, "build")
        for d in (self.src, self.inc, os.path.join(self.build, "obj")):
            os.makedirs(d)
        self.write(os.path.join(self.src, "a.cu"), '#include "near.cuh"\n#include <cstdio>\n')
        self.write(os.path.join(self.src, "near.cuh"), '#pragma once\n  #  include "lib/far.hpp"\n')
        self.write(os.path.join(self.inc, "far.hpp"), "#pragma once\n")
        self.write(os.path.join(self.src, "b.cu"), "__global__ void k() {}\n")
        self.write(os.path.join(self.src, "c.cpp"), '#include "near.cuh"\n')
        entries = []
        for name in ("a.cu", "b.cu", "c.cpp"):
            entries.append({
                "directory": self.build,
                "file": os.path.join("..", "src", name),
                "output": os.path.join("obj", name + ".o"),
                "command": "nvcc -I ../include -Iobj -c ../src/" + name + " -o obj/" + name + ".o",
            })
        with open(os.path.join(self.build, "compile_commands.json"), "w") as f:
            json.dump(entries, f)
        self.objA = os.path.join(self.build, "obj", "a.cu.o")
        self.objB = os.path.join(self.build, "obj", "b.cu.o")

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def run_script(self, *args):
        out = subprocess.run([sys.executable, SCRIPT, self.build, *args], capture_output=True, text=True,
                             cwd=self.tmp.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        return sorted(os.path.basename(line) for line in out.stdout.split())

    def age(self, path, seconds_ago):
        t = time.time() - seconds_ago
        os.utime(path, (t, t))

    def test_changed_files_name_the_objects_that_include_them(self):
        self.assertEqual(self.run_script(os.path.join(self.inc, "far.hpp")), ["a.cu.o"])
        self.assertEqual(self.run_script(os.path.join(self.src, "near.cuh")), ["a.cu.o"])
        self.assertEqual(self.run_script(os.path.join(self.src, "b.cu")), ["b.cu.o"])
        self.assertEqual(self.run_script(os.path.join(self.src, "c.cpp")), [], "C++ objects have depfiles")
        self.assertEqual(self.run_script(os.path.join(self.src, "a.cu"), os.path.join(self.src, "b.cu")),
                         ["a.cu.o", "b.cu.o"])

    def test_newer_headers_make_objects_stale_and_delete_removes_them(self):
        for path in (os.path.join(self.src, "a.cu"), os.path.join(self.src, "near.cuh"),
                     os.path.join(self.inc, "far.hpp"), os.path.join(self.src, "b.cu")):
            self.age(path, 100)
        self.assertEqual(self.run_script("--newer"), [], "objects not built yet are ninja's to build")
        for obj in (self.objA, self.objB):
            self.write(obj, "")
            self.age(obj, 50)
        self.assertEqual(self.run_script("--newer"), [])
        self.age(os.path.join(self.inc, "far.hpp"), 10)  # edited after the objects were built
        self.assertEqual(self.run_script("--newer"), ["a.cu.o"])
        self.assertTrue(os.path.exists(self.objA), "listed only")
        self.assertEqual(self.run_script("--newer", "--delete"), ["a.cu.o"])
        self.assertFalse(os.path.exists(self.objA))
        self.assertTrue(os.path.exists(self.objB))

    def test_no_build_folder_is_an_error(self):
        out = subprocess.run([sys.executable, SCRIPT, os.path.join(self.tmp.name, "none"), "--newer"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("compile_commands.json", out.stderr)


if __name__ == "__main__":
    unittest.main()
