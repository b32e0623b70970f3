"""A short run of bench/fuzz_decoders.py in the suite: mutated broker responses and record batches decode or raise
the typed error, never anything else (the bench runs >= 1M inputs)."""

from __future__ import annotations

import importlib.util
import pathlib

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench" / "fuzz_decoders.py"


def test_mutated_responses_and_batches_only_raise_typed_errors() -> None:
    spec = importlib.util.spec_from_file_location("fuzz_decoders", BENCH)
    assert spec is not None and spec.loader is not None
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    counts = fuzz.run(20_000, seed=7)
    assert counts["ok"] + counts["typed"] == 20_000
    assert counts["typed"] > 1000 and counts["ok"] > 100  # the mutator reaches both outcomes
