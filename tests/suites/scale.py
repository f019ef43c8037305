"""The CPU fake suite as a suite file (`gpubench run tests/suites/scale.py`)."""

from tests.fakes import ScaleSuite

BENCHMARK = ScaleSuite()
