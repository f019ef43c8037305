"""Steps are plain data: flattening, buffers and streams they use."""

from __future__ import annotations

import numpy as np

from gpubench.model.steps import (
    BufferRef,
    Copy,
    Launch,
    LibraryCall,
    Repeat,
    flatten,
    has_repeat,
    kernel_launches,
    referenced_buffers,
    streams_used,
)

K1 = Launch("k1", (1, 1, 1), (32, 1, 1), (BufferRef("a"), BufferRef("b", 64), np.int32(3)))
K2 = Launch("k2", (2, 1, 1), (64, 2, 1), (BufferRef("c"),), stream=2)
COPY = Copy("h", "a", stream=1)
LIB = LibraryCall("lib", lambda pointers, stream: None)
LOOP = Repeat((K1, Copy("a", "b")), flag="changed", max_iterations=9)


def test_flatten_opens_repeat_bodies_in_order():
    assert list(flatten([COPY, LOOP, K2])) == [COPY, K1, LOOP.body[1], K2]
    assert kernel_launches([COPY, LOOP, K2, LIB]) == [K1, K2]
    assert has_repeat([COPY, LOOP]) and not has_repeat([COPY, K1])


def test_buffers_and_streams_a_run_uses():
    assert referenced_buffers([COPY, LOOP, K2, LIB]) == {"h", "a", "b", "c", "changed"}
    assert streams_used([K1, COPY, K2, Copy("x", "y", stream=1)]) == [1, 2]
    assert K2.threads_per_block == 128
