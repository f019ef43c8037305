"""The CPU fake suite with variants that hang or kill their process, as a suite file."""

from tests.fakes import DangerousScaleSuite

BENCHMARK = DangerousScaleSuite()
