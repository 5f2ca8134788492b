"""Test fixture shared by test_report and test_crossover: a temporary directory, the fake
spillbench (fake_spillbench.py) driven by a hand-made table, and running a tool's main() in
this process with its stderr captured.
"""

import contextlib
import io
import os
import re
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_ENV = ("FAKE_TABLE", "FAKE_LOG", "FAKE_FAIL", "FAKE_JITTER", "FAKE_NOISE",
            "FAKE_AUTO_COST")


class FakeBenchCase(unittest.TestCase):
    TABLE = ""   # CSV for FAKE_TABLE, set by subclasses

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.bench = os.path.join(HERE, "fake_spillbench.py")
        table = os.path.join(d, "fake.csv")
        with open(table, "w") as f:
            f.write(self.TABLE)
        self.log = os.path.join(d, "calls.log")
        for k in FAKE_ENV:
            os.environ.pop(k, None)
        os.environ.update(FAKE_TABLE=table, FAKE_LOG=self.log)
        # the fake runs as spillbench does, a program of its own: it imports this package
        # from where the tests import it
        os.environ["PYTHONPATH"] = os.path.dirname(HERE)
        self.data = os.path.join(d, "data")
        os.makedirs(self.data)
        open(os.path.join(self.data, "meta.txt"), "w").close()  # no generation step
        self.temp = os.path.join(d, "t")

    def tearDown(self):
        for k in FAKE_ENV:
            os.environ.pop(k, None)
        self.tmp.cleanup()

    def calls(self):
        """The argument lines the fake spillbench was called with."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def main(self, tool_main, *argv):
        """(exit status, stderr) of tool_main(argv) with the fake's paths."""
        err = io.StringIO()
        argv = [f"--spillbench={self.bench}", f"--data-dir={self.data}",
                f"--temp-dir={self.temp}", *argv]
        with contextlib.redirect_stderr(err):
            try:
                status = tool_main(argv)
            except SystemExit as e:
                status = e.code
        return status, err.getvalue()

    @staticmethod
    def read(path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def assert_no_machine_paths(self, *paths):
        """None of the files names the temporary directory, the repository or any other
        absolute path (a '/' opening a word)."""
        repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
        for p in paths:
            text = self.read(p)
            self.assertNotIn(self.tmp.name, text, p)
            self.assertNotIn(repo, text, p)
            self.assertIsNone(re.search(r"(^|[\s=`'\"(:])/[A-Za-z]", text, re.M), p)
