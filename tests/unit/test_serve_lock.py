"""serve.sh's setup lock: two `serve.sh --setup-only` started together on one venv and cache set
up one after the other, never at once. The setup is a stand-in (tests/support/fake_serve.py's
venv, and a python3 whose `verify_install.py install`, a step of every installing setup, marks
itself inside, then waits up to WINDOW_S for the other to come in too, counting each time it
does). Without the lock both come in within that window; with it the second waits for the
first's setup to end. The assertions are counts: overlaps 0, two setups, one wait said.
Run: python3 -S -m unittest tests.unit.test_serve_lock
"""
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.support.fake_serve import fake_install, write_exe
from tests.support.paths import ROOT

WINDOW_S = 3  # how long each stand-in setup stays inside, watching for the other
PYTHON3 = """#!/bin/sh
case "$1 $2" in
  */verify_install.py\\ install)
    marks="{marks}"
    touch "$marks/in.$$"
    i=0
    while [ $i -lt {polls} ]; do
      if [ "$(ls "$marks" | grep -c '^in\\.')" -gt 1 ]; then echo $$ >> "$marks/overlaps"; break; fi
      sleep 0.1; i=$((i + 1))
    done
    rm "$marks/in.$$"
    echo $$ >> "$marks/setups"
    exit 0 ;;
esac
exec "{real}" "$@"
"""


class SetupLock(unittest.TestCase):
    def test_two_setups_at_once_run_one_after_the_other(self):
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            env = fake_install(tmp)
            marks = tmp / "marks"
            marks.mkdir()
            real = (tmp / "bin" / "python3").read_text().split('exec "')[1].split('"')[0]
            write_exe(tmp / "bin" / "python3", PYTHON3.format(
                marks=marks, polls=WINDOW_S * 10, real=real))
            env.update(ONEPASS_INSTALL="1")  # an installing setup: the venv's lock too
            runs = [subprocess.Popen(["bash", str(ROOT / "serve.sh"), "--setup-only"], env=env,
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True) for _ in range(2)]
            outs = [r.communicate(timeout=120)[0] for r in runs]
            for r, out in zip(runs, outs):
                self.assertEqual(r.returncode, 0, out)
                self.assertIn("setup: done", out)
            self.assertEqual(len((marks / "setups").read_text().split()), 2)
            self.assertFalse((marks / "overlaps").exists(), outs)
            waited = [out for out in outs if "setup: waiting for another serve.sh's setup" in out]
            self.assertEqual(len(waited), 1, outs)
            self.assertTrue((tmp / "venv" / ".onepass-setup.lock").exists())
            self.assertTrue((tmp / "cache" / "setup.lock").exists())


if __name__ == "__main__":
    unittest.main()
