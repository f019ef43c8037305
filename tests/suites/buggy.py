"""The CPU fake suite with a bug in its own code (its inputs raise): only for tests of how the
worker reports a bug that is neither a GPU error nor a refusal."""

from tests.fakes import ScaleSuite


class BuggySuite(ScaleSuite):
    name = "buggy_scale"

    def inputs(self, point, rng):
        raise ZeroDivisionError("a bug in the suite")


BENCHMARK = BuggySuite()
