"""The package chooses how idle OpenMP threads wait, as the xtrain tool does
(src/core/openmp_waiting.cpp): from the load when the user set nothing, as
the user said otherwise. A child process shows what an import does."""
import os
import subprocess
import sys

SCRIPT = "import xtrain\nprint(xtrain.openmp_waiting())\n"


def waiting_line(**variables):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environment.update(variables)
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=environment, check=True)
    return run.stdout.strip()


def test_without_a_setting_the_import_chooses_the_spin_from_the_load():
    line = waiting_line()
    assert line.startswith("other processes used "), line
    # One of the three counts, said in the line.
    assert any(" poll %d times before sleeping" % polls in line for polls in (0, 1000, 300000)), line


def test_the_users_setting_wins():
    line = waiting_line(OMP_WAIT_POLICY="passive")
    assert line.startswith("OMP_WAIT_POLICY=passive in the environment"), line
    line = waiting_line(GOMP_SPINCOUNT="1000")
    assert line.startswith("GOMP_SPINCOUNT=1000 in the environment"), line
