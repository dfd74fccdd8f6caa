"""Shared helpers of the wrap_*.py interop tests (python3 standard library only)."""
import os
import shutil
import subprocess
import sys
import tempfile

LLVM19 = "/usr/lib/llvm-19/bin"
LLD19 = f"{LLVM19}/ld.lld"  # /usr/bin/ld.lld may be another LLVM's
HERE = os.path.dirname(os.path.abspath(__file__))


class Suite:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.ot = os.environ.get("OFFLOADTOOL", "offloadtool")
        self.tmp = tempfile.mkdtemp(prefix=name + "-")

    def check(self, what, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")
            if detail:
                print("  " + str(detail).replace("\n", "\n  "))

    def skip(self, what):
        self.skipped += 1
        print(f"SKIP: {what}")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run(self, args, env=None, check=False, cwd=None):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        r = subprocess.run(args, capture_output=True, text=True, env=full_env, cwd=cwd or self.tmp)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        return r

    def wrap(self, args):
        return self.run([self.ot, "wrap"] + args)

    def tool_clean(self, what, args):
        """Runs an LLVM inspection tool; passes when it exits 0 with nothing on stderr."""
        r = self.run(args)
        self.check(f"{what}: {os.path.basename(args[0])} without warnings", r.returncode == 0 and not r.stderr.strip(),
                   r.stderr[-2000:])
        return r.stdout

    def finish(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        line = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            line += f", {self.skipped} skipped"
        print(line)
        sys.exit(1 if self.failed else 0)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def have(program):
    return shutil.which(program) is not None or os.path.exists(program)
