"""Bad command lines: every subcommand, knob and output path, one outcome each.

Each case runs ``tx8lab.cli.main`` in-process and expects exactly one outcome: exit 0, or
exit 2 with ONE stderr line ``tx8lab: error: ...`` that matches a pattern naming the flag
or field at fault. After a failure no output named on the command line exists (or a file
that existed before is unchanged); after a success each output exists and no temporary is
left beside it. Successful runs stop early in the pipeline (``--until``) on tiny models,
and the budget cases use sizes a missing check could not finish, so a regression hangs
or runs out of memory instead of passing.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tx8lab import cli
from tx8lab.cli import main
from tx8lab.core.passes import PASSES

OLD = "previous content\n"
"""What a pre-existing output holds before a case runs (it must survive a failure)."""


@dataclass(frozen=True)
class Case:
    """One command line and its one expected outcome."""

    id: str
    argv: tuple[str, ...]
    """``{tmp}`` is replaced by the case's folder."""
    error: str | None = None
    """Regex the single stderr line must match after ``tx8lab: error: ``; None: exit 0."""
    outputs: tuple[str, ...] = ()
    """Paths (under ``{tmp}``) the command would write: absent after an error, present after
    success."""
    existing: tuple[str, ...] = ()
    """Outputs created with :data:`OLD` before the run (kept as they were on an error)."""
    setup: tuple[str, ...] = field(default=())
    """Extra set-up steps: ``dir:NAME``, ``ro:NAME`` (a read-only folder), ``file:NAME``,
    ``nests:NAME`` (a fusible MLIR file), ``alloc:NAME`` (a small MiniMalloc CSV)."""


# --------------------------------------------------------------------------- the corpus

RUN = ("run", "tiny_cnn", "--until", "dce")
NESTS = """func.func @f(%a: memref<16xf32>, %c: memref<16xf32>) {
  %b = memref.alloc() : memref<16xf32>
  affine.for %i = 0 to 16 {
    %v = affine.load %a[%i] : memref<16xf32>
    affine.store %v, %b[%i] : memref<16xf32>
  }
  affine.for %i = 0 to 16 {
    %v = affine.load %b[%i] : memref<16xf32>
    affine.store %v, %c[%i] : memref<16xf32>
  }
  return
}
"""
ALLOC = "id,lower,upper,size\na,0,4,8\nb,2,6,4\nc,4,8,8\n"


def _bad_knob_values() -> Iterator[Case]:
    """A value of the wrong type (and out of range / not a choice) for every knob."""
    for pass_name, cls in PASSES.items():
        for knob in cls.knobs():
            key = f"{pass_name}.{knob.name}"
            where = re.escape(key)
            bad: list[tuple[str, str]] = []
            if knob.type is bool:
                bad.append(("maybe", "bool"))
            elif knob.type in (int, float):
                bad.append(("abc", "not a valid"))
                if knob.min is not None:
                    bad.append((str(int(knob.min) - 1), ">="))
                if knob.max is not None:
                    bad.append((str(int(knob.max) + 1), "<="))
            elif knob.choices:
                bad.append(("no-such-choice", "one of"))
            for value, why in bad:
                argv = ("run", "tiny_cnn", "--passes", pass_name, "--set")
                # the knob's pass must be in the pipeline: run just that pass
                yield Case(
                    f"set-{key}={value}",
                    (*argv, f"{key}={value}", "--json", "{tmp}/r.json"),
                    rf"{where}.*{why}|{why}.*{where}",
                    outputs=("r.json",),
                )


def _hw_cases() -> Iterator[Case]:
    bad = [
        ("tile.spm_bytes=abc", r"tile\.spm_bytes"),
        ("tile.spm_bytes=-1", r"tile\.spm_bytes"),
        ("tile.spm_bytes=0", r"tile\.spm_bytes"),
        ("tile.spm_bytes=", r"--hw-set"),
        ("=5", r"--hw-set"),
        ("nope=1", r"'nope'"),
        ("tile.nope=1", r"tile\.nope"),
        ("mesh_shape=0x0", r"mesh_shape"),
        ("mesh_shape=abc", r"mesh_shape"),
        ("clock_hz=-5", r"clock_hz"),
        ("clock_hz=nan", r"clock_hz"),
        ("num_chips=0", r"num_chips"),
        ("ddr_bytes=1.5", r"ddr_bytes"),
        ("tile.queue_depth=0", r"queue_depth"),
        ("tile.ncc_join_s=-1", r"ncc_join_s"),
        ("tile.ne_granule_mkn=x", r"ne_granule_mkn"),
    ]
    for text, pattern in bad:
        for cmd in (RUN, ("fa", "--shape", "1,2,64,64", "--block", "64,64")):
            out = "{tmp}/o.json"
            yield Case(
                f"hw-set-{cmd[0]}-{text}",
                (*cmd, "--hw-set", text, "--json", out),
                pattern,
                ("o.json",),
            )
    yield Case(
        "hw-unknown-preset",
        (*RUN, "--hw", "nope", "--json", "{tmp}/o.json"),
        r"'nope'",
        ("o.json",),
    )
    yield Case("hw-set-no-equals", (*RUN, "--hw-set", "tile.spm_bytes"), r"--hw-set")


def _model_arg_cases() -> Iterator[Case]:
    bad = [
        ("tiny_cnn", "size=abc", r"'size'"),
        ("tiny_cnn", "size=0", r"'size'.*>= 1"),
        ("tiny_cnn", "size=-3", r"'size'"),
        ("tiny_cnn", "nope=1", r"'nope'"),
        ("tiny_cnn", "dtype=i7", r"'dtype'"),
        ("tiny_cnn", "batch=99999999", r"'batch'.*limit"),
        ("tiny_cnn", "size=", r"--model-arg"),
        ("tiny_cnn", "=3", r"--model-arg"),
        ("resnet50", "size=100000", r"resnet50.*tensor.*limit"),
        ("resnet50", "batch=5000", r"resnet50.*tensor.*limit"),
        ("bert_base", "layers=100000", r"'layers'.*limit"),
        ("bert_base", "hidden=1000000", r"'hidden'.*limit|bert_base"),
        ("llama_decoder", "layers=1000000000", r"'layers'.*limit"),
        ("llama_decoder", "vocab=1048576", r"llama_decoder.*'vocab'.*limit"),
        ("llama_decoder", "lm_head=maybe", r"'lm_head'"),
        ("tiny_transformer_block", "seq=1048576", r"'seq'=1048576.*limit"),
        ("vit_tiny", "size=1000000", r"'size'.*limit"),
        ("batchnorm_demo", "channels=1048576", r"batchnorm_demo.*tensor.*limit|channels"),
    ]
    for model, text, pattern in bad:
        yield Case(
            f"model-arg-{model}-{text}",
            ("run", model, "--until", "dce", "--model-arg", text, "--json", "{tmp}/o.json"),
            pattern,
            ("o.json",),
        )
    yield Case(
        "model-arg-on-mlir-file",
        ("run", "{tmp}/x.mlir", "--model-arg", "size=3"),
        r"--model-arg",
    )
    yield Case("input-shape-on-zoo", (*RUN, "--input-shape", "x=1x3"), r"--input-shape")
    yield Case(
        "unknown-model",
        ("run", "no_such_model", "--json", "{tmp}/o.json"),
        r"no_such_model",
        ("o.json",),
    )
    yield Case("missing-onnx", ("run", "{tmp}/missing.onnx"), r"missing\.onnx")


def _run_cases() -> Iterator[Case]:
    yield Case("run-ok-json", (*RUN, "--json", "{tmp}/r.json"), None, ("r.json",))
    yield Case(
        "run-ok-json-replaces", (*RUN, "--json", "{tmp}/r.json"), None, ("r.json",), ("r.json",)
    )
    yield Case(
        "run-ok-json-new-folder-missing",
        (*RUN, "--json", "{tmp}/nodir/r.json"),
        r"--json.*nodir.*no folder",
        ("nodir/r.json", "nodir"),
    )
    yield Case(
        "run-json-ok-report-missing-dir",
        (*RUN, "--json", "{tmp}/ok.json", "--report", "/nonexistent/r.html"),
        r"--report.*/nonexistent/r\.html",
        ("ok.json",),
    )
    yield Case(
        "run-json-existing-kept-report-missing-dir",
        (*RUN, "--json", "{tmp}/ok.json", "--report", "/nonexistent/r.html"),
        r"--report.*/nonexistent",
        ("ok.json",),
        ("ok.json",),
    )
    yield Case(
        "run-json-readonly-dir",
        (*RUN, "--json", "{tmp}/ro/r.json"),
        r"--json.*ro/r\.json.*read-only",
        ("ro/r.json",),
        setup=("ro:ro",),
    )
    yield Case(
        "run-trace-readonly-dir",
        (*RUN, "--trace", "{tmp}/ro/t.json"),
        r"--trace.*read-only",
        ("ro/t.json",),
        setup=("ro:ro",),
    )
    yield Case(
        "run-report-readonly-dir",
        (*RUN, "--report", "{tmp}/ro/r.html", "--json", "{tmp}/r.json"),
        r"--report.*read-only",
        ("ro/r.html", "r.json"),
        setup=("ro:ro",),
    )
    yield Case(
        "run-json-is-a-dir",
        (*RUN, "--json", "{tmp}/d"),
        r"--json.*directory",
        setup=("dir:d",),
    )
    yield Case(
        "run-trace-is-a-dir",
        (*RUN, "--trace", "{tmp}/d", "--json", "{tmp}/r.json"),
        r"--trace.*directory",
        ("r.json",),
        setup=("dir:d",),
    )
    yield Case(
        "run-report-is-a-dir",
        (*RUN, "--report", "{tmp}/d"),
        r"--report.*directory",
        setup=("dir:d",),
    )
    yield Case("run-json-empty", (*RUN, "--json", ""), r"--json")
    yield Case(
        "run-json-same-as-trace",
        (*RUN, "--json", "{tmp}/x.json", "--trace", "{tmp}/x.json"),
        r"--trace.*another output",
        ("x.json",),
    )
    yield Case(
        "run-emit-c-is-a-file",
        (*RUN, "--emit-c", "{tmp}/f", "--json", "{tmp}/r.json"),
        r"--emit-c.*cannot write",
        ("r.json",),
        ("f",),
    )
    yield Case(
        "run-emit-c-under-a-file",
        (*RUN, "--emit-c", "{tmp}/f/c"),
        r"--emit-c.*cannot write.*is a file",
        ("f/c",),
        ("f",),
    )
    yield Case(
        "run-emit-c-readonly",
        (*RUN, "--emit-c", "{tmp}/ro/c"),
        r"--emit-c.*read-only",
        ("ro/c",),
        setup=("ro:ro",),
    )
    yield Case(
        "run-emit-c-needs-codegen",
        (*RUN, "--emit-c", "{tmp}/c", "--json", "{tmp}/r.json"),
        r"--emit-c needs the codegen pass",
        ("c", "r.json"),
    )
    yield Case(
        "run-execute-without-emit-c",
        (*RUN, "--execute", "--json", "{tmp}/r.json"),
        r"--execute needs --emit-c",
        ("r.json",),
    )
    yield Case(
        "run-trace-needs-group-cost",
        (*RUN, "--trace", "{tmp}/t.json", "--json", "{tmp}/r.json"),
        r"--trace needs the group-cost pass",
        ("t.json", "r.json"),
    )
    yield Case(
        "run-explain-needs-group-cost",
        (*RUN, "--explain", "slowest", "--json", "{tmp}/r.json"),
        r"--explain needs the group-cost pass",
        ("r.json",),
    )
    yield Case(
        "run-until-unknown",
        ("run", "tiny_cnn", "--until", "nope", "--json", "{tmp}/r.json"),
        r"nope",
        ("r.json",),
    )
    yield Case("run-passes-unknown", ("run", "tiny_cnn", "--passes", "dce,nope"), r"nope")
    yield Case("run-set-unknown-pass", (*RUN, "--set", "nopass.x=1"), r"nopass")
    yield Case("run-set-unknown-knob", (*RUN, "--set", "dce.nope=1"), r"dce.*'nope'")
    yield Case("run-set-no-equals", (*RUN, "--set", "dce"), r"'dce'.*pass\.knob=value")
    yield Case(
        "run-set-pass-not-in-pipeline",
        (*RUN, "--set", "group-pattern.prefer=longest"),
        r"group-pattern",
    )
    yield Case(
        "run-set-bad-string-knob-at-run",
        (
            "run",
            "tiny_cnn",
            "--until",
            "group",
            "--set",
            "group.opt_group=zzz",
            "--json",
            "{tmp}/r.json",
        ),
        r"opt_group",
        ("r.json",),
    )
    yield Case(
        "run-set-patterns-file-missing",
        ("run", "tiny_cnn", "--until", "group", "--set", "group.patterns_file={tmp}/none.txt"),
        r"none\.txt",
    )
    yield Case("run-max-ops-zero", (*RUN, "--max-ops", "0"), r"--max-ops")
    yield Case("run-max-ops-text", (*RUN, "--max-ops", "many"), r"--max-ops")
    yield Case(
        "run-max-ops-refuses",
        (*RUN, "--max-ops", "3", "--json", "{tmp}/r.json"),
        r"tiny_cnn: \d+ ops, above --max-ops 3",
        ("r.json",),
    )
    yield Case(
        "run-max-ops-ok", (*RUN, "--max-ops", "1000", "--json", "{tmp}/r.json"), None, ("r.json",)
    )
    yield Case("run-unknown-flag", (*RUN, "--nope"), r"--nope")
    yield Case("run-no-model", ("run",), r"MODEL|model|required")
    yield Case("run-dump-ok", (*RUN, "--print-ir-after-all"), None)


def _opt_cases() -> Iterator[Case]:
    yield Case("opt-missing-file", ("opt", "{tmp}/no.mlir", "-p", "dce"), r"no\.mlir")
    yield Case("opt-no-pipeline", ("opt", "{tmp}/x.mlir"), r"-p|--pass-pipeline")
    yield Case("opt-bad-pipeline", ("opt", "{tmp}/x.mlir", "-p", "dce{"), r"dce|pipeline")
    yield Case("opt-unknown-pass", ("opt", "{tmp}/x.mlir", "-p", "nope"), r"nope")
    yield Case(
        "opt-bad-knob", ("opt", "{tmp}/x.mlir", "-p", "fold-constants{max_bytes=x}"), r"max_bytes"
    )
    yield Case(
        "opt-max-ops", ("opt", "{tmp}/x.mlir", "-p", "dce", "--max-ops", "1"), r"--max-ops 1"
    )
    yield Case("opt-ok", ("opt", "{tmp}/x.mlir", "-p", "dce"), None)


def _fuse_cases() -> Iterator[Case]:
    f = "{tmp}/n.mlir"
    setup = ("nests:n.mlir",)
    yield Case(
        "fuse-ok-json", ("fuse", f, "--json", "{tmp}/f.json"), None, ("f.json",), setup=setup
    )
    yield Case(
        "fuse-missing",
        ("fuse", "{tmp}/none.mlir", "--json", "{tmp}/f.json"),
        r"none\.mlir",
        ("f.json",),
    )
    yield Case(
        "fuse-json-missing-dir",
        ("fuse", f, "--json", "{tmp}/no/f.json"),
        r"--json.*no folder",
        ("no/f.json",),
        setup=setup,
    )
    yield Case(
        "fuse-json-readonly",
        ("fuse", f, "--json", "{tmp}/ro/f.json"),
        r"--json.*read-only",
        ("ro/f.json",),
        setup=(*setup, "ro:ro"),
    )
    yield Case(
        "fuse-json-is-dir",
        ("fuse", f, "--json", "{tmp}/d"),
        r"--json.*directory",
        setup=(*setup, "dir:d"),
    )
    for tol in ("-1", "abc", "nan", "inf"):
        yield Case(
            f"fuse-tolerance-{tol}",
            ("fuse", f, "--compute-tolerance", tol, "--json", "{tmp}/f.json"),
            r"--compute-tolerance",
            ("f.json",),
            setup=setup,
        )
    yield Case("fuse-bad-mode", ("fuse", f, "--mode", "sibling"), r"--mode", setup=setup)
    yield Case(
        "fuse-bad-hw-set",
        ("fuse", f, "--hw-set", "tile.spm_bytes=x", "--json", "{tmp}/f.json"),
        r"tile\.spm_bytes",
        ("f.json",),
        setup=setup,
    )
    yield Case(
        "fuse-one-nest",
        ("fuse", "{tmp}/x.mlir", "--json", "{tmp}/f.json"),
        r"x\.mlir|nest|func",
        ("f.json",),
    )


def _fa_cases() -> Iterator[Case]:
    base = ("fa", "--shape", "1,2,64,64")
    blk = (*base, "--block", "64,64")
    j = ("--json", "{tmp}/fa.json")
    yield Case("fa-ok-block-json", (*blk, *j), None, ("fa.json",))
    yield Case("fa-ok-backward", (*blk, "--backward", *j), None, ("fa.json",))
    yield Case("fa-ok-gqa", (*blk, "--kv-heads", "1", "--s2", "128", *j), None, ("fa.json",))
    for shape in ("1,2,64", "1,2,64,64,1", "a,b,c,d", "0,2,64,64", "1,-2,64,64", "", "1,,64,64"):
        yield Case(
            f"fa-shape-{shape or 'empty'}", ("fa", "--shape", shape, *j), r"--shape", ("fa.json",)
        )
    for block in ("64", "0,64", "64,x", "-64,64", "64,64,64"):
        yield Case(f"fa-block-{block}", (*base, "--block", block, *j), r"--block", ("fa.json",))
    for value in ("0", "-1", "x", "3"):
        yield Case(
            f"fa-kv-heads-{value}", (*blk, "--kv-heads", value, *j), r"--kv-heads", ("fa.json",)
        )
        yield Case(
            f"fa-kv-heads-search-{value}",
            (*base, "--kv-heads", value, *j),
            r"--kv-heads",
            ("fa.json",),
        )
    for value in ("0", "-5", "x"):
        yield Case(f"fa-s2-{value}", (*blk, "--s2", value, *j), r"--s2", ("fa.json",))
        yield Case(f"fa-s2-search-{value}", (*base, "--s2", value, *j), r"--s2", ("fa.json",))
    for flag, value in (
        ("--schedule", "fast"),
        ("--split", "rows"),
        ("--dtype", "i8"),
        ("--vector-dtype", "f64"),
        ("--transpose", "dma"),
        ("--io-layout", "nhwc"),
        ("--max-block-pairs", "0"),
        ("--max-block-pairs", "x"),
    ):
        yield Case(f"fa-{flag}-{value}", (*blk, flag, value, *j), re.escape(flag), ("fa.json",))
    yield Case("fa-no-shape", ("fa", *j), r"--shape", ("fa.json",))
    yield Case(
        "fa-double-issue-needs-pingpong-ok",
        (*blk, "--schedule", "double-issue", *j),
        None,
        ("fa.json",),
    )
    # budgets: a billion keys (the search, a fixed block, the backward) refused before any list
    huge = ("fa", "--shape", "1,1,1000000000,128")
    yield Case("fa-huge-search", (*huge, *j), r"block pairs.*--max-block-pairs", ("fa.json",))
    yield Case(
        "fa-huge-block",
        (*huge, "--block", "128,128", *j),
        r"block pairs.*--max-block-pairs",
        ("fa.json",),
    )
    yield Case(
        "fa-huge-backward",
        (*huge, "--block", "128,128", "--backward", *j),
        r"block pairs.*--max-block-pairs",
        ("fa.json",),
    )
    yield Case(
        "fa-budget-knob",
        (*blk, "--max-block-pairs", "1", *j),
        r"2 block pairs.*max_block_pairs=1\b",
        ("fa.json",),
    )
    yield Case(
        "fa-huge-s2",
        (*blk, "--s2", "4000000000", *j),
        r"block pairs",
        ("fa.json",),
    )
    yield Case(
        "fa-json-missing-dir",
        (*blk, "--json", "{tmp}/no/fa.json"),
        r"--json.*no folder",
        ("no/fa.json",),
    )
    yield Case(
        "fa-json-readonly",
        (*blk, "--json", "{tmp}/ro/fa.json"),
        r"--json.*read-only",
        ("ro/fa.json",),
        setup=("ro:ro",),
    )
    yield Case(
        "fa-json-is-dir", (*blk, "--json", "{tmp}/d"), r"--json.*directory", setup=("dir:d",)
    )
    yield Case("fa-json-existing-kept", (*huge, *j), r"block pairs", ("fa.json",), ("fa.json",))


def _alloc_cases() -> Iterator[Case]:
    p = "{tmp}/p.csv"
    setup = ("alloc:p.csv",)
    o = ("--out", "{tmp}/s.csv")
    yield Case("alloc-ok", ("alloc", p, "--capacity", "1Ki", *o), None, ("s.csv",), setup=setup)
    yield Case(
        "alloc-ok-seed",
        ("alloc", p, "--capacity", "64", "--strategy", "seed", *o),
        None,
        ("s.csv",),
        setup=setup,
    )
    yield Case(
        "alloc-ok-replaces",
        ("alloc", p, "--capacity", "1Ki", *o),
        None,
        ("s.csv",),
        ("s.csv",),
        setup=setup,
    )
    yield Case(
        "alloc-missing-problem",
        ("alloc", "{tmp}/none.csv", "--capacity", "1Ki", *o),
        r"none\.csv",
        ("s.csv",),
    )
    for cap in ("abc", "-1", "1.5", ""):
        yield Case(
            f"alloc-capacity-{cap or 'empty'}",
            ("alloc", p, "--capacity", cap, *o),
            r"--capacity",
            ("s.csv",),
            setup=setup,
        )
    yield Case("alloc-no-capacity", ("alloc", p, *o), r"--capacity", ("s.csv",), setup=setup)
    yield Case(
        "alloc-does-not-fit",
        ("alloc", p, "--capacity", "4", *o),
        r"does not fit|4 bytes",
        ("s.csv",),
        ("s.csv",),
        setup=setup,
    )
    for limit in ("0", "-1", "x", "nan", "inf"):
        yield Case(
            f"alloc-time-limit-{limit}",
            ("alloc", p, "--capacity", "1Ki", "--time-limit", limit, *o),
            r"--time-limit",
            ("s.csv",),
            setup=setup,
        )
    yield Case(
        "alloc-strategy",
        ("alloc", p, "--capacity", "1Ki", "--strategy", "worst"),
        r"--strategy",
        setup=setup,
    )
    yield Case(
        "alloc-out-missing-dir",
        ("alloc", p, "--capacity", "1Ki", "--out", "{tmp}/no/s.csv"),
        r"--out.*no folder",
        ("no/s.csv",),
        setup=setup,
    )
    yield Case(
        "alloc-out-readonly",
        ("alloc", p, "--capacity", "1Ki", "--out", "{tmp}/ro/s.csv"),
        r"--out.*read-only",
        ("ro/s.csv",),
        setup=(*setup, "ro:ro"),
    )
    yield Case(
        "alloc-out-is-dir",
        ("alloc", p, "--capacity", "1Ki", "--out", "{tmp}/d"),
        r"--out.*directory",
        setup=(*setup, "dir:d"),
    )
    yield Case(
        "alloc-out-before-reading",
        ("alloc", "{tmp}/none.csv", "--capacity", "1Ki", "--out", "/nonexistent/s.csv"),
        r"--out.*/nonexistent",
    )


def _testcase_cases() -> Iterator[Case]:
    yield Case(
        "testcase-unknown-op",
        ("testcase", "NoSuchOp", "--out", "{tmp}/cases"),
        r"NoSuchOp",
        ("cases",),
    )
    yield Case(
        "testcase-out-is-file",
        ("testcase", "Relu", "--out", "{tmp}/f"),
        r"--out.*cannot write",
        existing=("f",),
    )
    yield Case(
        "testcase-out-under-file",
        ("testcase", "Relu", "--out", "{tmp}/f/x"),
        r"--out.*is a file",
        ("f/x",),
        ("f",),
    )
    yield Case(
        "testcase-out-readonly",
        ("testcase", "Relu", "--out", "{tmp}/ro/x"),
        r"--out.*read-only",
        ("ro/x",),
        setup=("ro:ro",),
    )
    yield Case(
        "testcase-count-0",
        ("testcase", "Relu", "--count", "0", "--out", "{tmp}/cases/deep"),
        r"count",
        ("cases",),
    )
    yield Case(
        "testcase-seed-text",
        ("testcase", "Relu", "--seed", "x", "--out", "{tmp}/cases"),
        r"--seed",
        ("cases",),
    )
    yield Case(
        "testcase-seed-negative",
        ("testcase", "Relu", "--seed", "-1", "--out", "{tmp}/cases"),
        r"seed",
        ("cases",),
    )
    yield Case("testcase-no-out", ("testcase", "Relu"), r"--out")
    yield Case(
        "testcase-bad-hw-set",
        ("testcase", "Relu", "--hw-set", "tile.spm_bytes=x", "--out", "{tmp}/cases"),
        r"tile\.spm_bytes",
        ("cases",),
    )


def _calibrate_cases() -> Iterator[Case]:
    yield Case(
        "calibrate-out-missing-dir",
        ("calibrate", "--out", "{tmp}/no/c.json"),
        r"--out.*no folder",
        ("no/c.json",),
    )
    yield Case(
        "calibrate-json-missing-dir",
        ("calibrate", "--json", "/nonexistent/c.json"),
        r"--json.*/nonexistent",
    )
    yield Case(
        "calibrate-out-readonly",
        ("calibrate", "--out", "{tmp}/ro/c.json"),
        r"--out.*read-only",
        ("ro/c.json",),
        setup=("ro:ro",),
    )
    yield Case(
        "calibrate-json-is-dir",
        ("calibrate", "--json", "{tmp}/d"),
        r"--json.*directory",
        setup=("dir:d",),
    )
    yield Case(
        "calibrate-out-existing-kept",
        ("calibrate", "--out", "{tmp}/c.json", "--json", "{tmp}/no/j.json"),
        r"--json.*no folder",
        ("c.json",),
        ("c.json",),
    )
    yield Case(
        "calibrate-board-missing",
        ("calibrate", "--board", "{tmp}/noboard", "--json", "{tmp}/c.json"),
        r"noboard",
        ("c.json",),
    )
    yield Case(
        "calibrate-bad-hw",
        ("calibrate", "--hw", "nope", "--json", "{tmp}/c.json"),
        r"'nope'",
        ("c.json",),
    )


def _misc_cases() -> Iterator[Case]:
    yield Case("no-command", (), r"COMMAND|command|required")
    yield Case("unknown-command", ("frobnicate",), r"frobnicate")
    yield Case("models-ok", ("models",), None)
    yield Case("models-extra-arg", ("models", "x"), r"unrecognized arguments: x")


def _cases() -> list[Case]:
    return [
        *_bad_knob_values(),
        *_hw_cases(),
        *_model_arg_cases(),
        *_run_cases(),
        *_opt_cases(),
        *_fuse_cases(),
        *_fa_cases(),
        *_alloc_cases(),
        *_testcase_cases(),
        *_calibrate_cases(),
        *_misc_cases(),
    ]


CASES = _cases()


# --------------------------------------------------------------------------- the check


def _prepare(case: Case, tmp: Path) -> None:
    (tmp / "x.mlir").write_text(_tiny_mlir(), encoding="utf-8")
    for step in case.setup:
        kind, _, name = step.partition(":")
        path = tmp / name
        if kind == "dir":
            path.mkdir()
        elif kind == "ro":
            path.mkdir()
            path.chmod(stat.S_IRUSR | stat.S_IXUSR)
        elif kind == "file":
            path.write_text(OLD, encoding="utf-8")
        elif kind == "nests":
            path.write_text(NESTS, encoding="utf-8")
        elif kind == "alloc":
            path.write_text(ALLOC, encoding="utf-8")
    for name in case.existing:
        (tmp / name).write_text(OLD, encoding="utf-8")


_MLIR: list[str] = []


def _tiny_mlir() -> str:
    if not _MLIR:
        from tx8lab.core.builder import Builder
        from tx8lab.core.text import print_module

        b = Builder(**{"tx8.model": "tiny"})
        x = b.input((4, 4), "f32")
        b.output(b.op("Relu", b.op("Neg", x)))
        _MLIR.append(print_module(b.finish()))
    return _MLIR[0]


def _leftovers(tmp: Path) -> list[str]:
    """Temporary outputs left anywhere under ``tmp`` (the writer's ``.NAME.XXXX.tmp``)."""
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob(".*.tmp"))


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cli_case(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    read_only = [tmp_path / s[3:] for s in case.setup if s.startswith("ro:")]
    if read_only and _running_as_root():
        # root may write into a folder without write permission; the kernel's answer
        # for any other user is what os.access gives there, so ask it that way
        real = os.access

        def access(path: Any, mode: int, **kw: Any) -> bool:
            inside = any(Path(path).resolve().is_relative_to(d.resolve()) for d in read_only)
            return False if inside and mode & os.W_OK else real(path, mode, **kw)

        monkeypatch.setattr(os, "access", access)
    _prepare(case, tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    code = main(argv)
    captured = capsys.readouterr()
    for step in case.setup:
        if step.startswith("ro:"):
            (tmp_path / step[3:]).chmod(stat.S_IRWXU)
    if case.error is None:
        assert code == 0, captured.err
        assert captured.err.strip() == "" or "error" not in captured.err
        for name in case.outputs:
            path = tmp_path / name
            assert path.exists(), name
            if name in case.existing:
                assert path.read_text(encoding="utf-8") != OLD, f"{name} was not replaced"
    else:
        lines = captured.err.splitlines()
        assert code == 2, (code, captured.err)
        assert len(lines) == 1, captured.err
        prefix = "tx8lab: error: "
        assert lines[0].startswith(prefix), lines[0]
        assert re.search(case.error, lines[0][len(prefix) :]), lines[0]
        for name in case.outputs:
            path = tmp_path / name
            if name in case.existing:
                assert path.read_text(encoding="utf-8") == OLD, f"{name} changed"
            else:
                assert not path.exists(), f"{name} was left behind"
    assert _leftovers(tmp_path) == []


def test_the_corpus_is_large_and_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 150
    errors = sum(c.error is not None for c in CASES)
    assert errors > 100
    assert len(CASES) - errors >= 10


# --------------------------------------------------------------------------- atomicity


def _fail(*args: Any, **kwargs: Any) -> Any:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize(
    ("target", "extra"),
    [
        ("tx8lab.core.report.write_report", ()),
        ("tx8lab.cli._write_trace", ("--trace", "{tmp}/t.json")),
        ("tx8lab.cli._write_html", ("--report", "{tmp}/r.html")),
        ("tx8lab.cli._explain_group", ("--explain", "slowest")),
    ],
)
def test_a_late_failure_writes_no_output(
    target: str,
    extra: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The JSON report, the trace, the HTML page and main.c: all or none of them."""
    (tmp_path / "keep.json").write_text(OLD, encoding="utf-8")
    monkeypatch.setattr(target, _fail)
    argv = [
        "run",
        "tiny_cnn",
        "--until",
        "codegen",
        "--set",
        "group-cost.search=default",
        "--set",
        "group-cost.simulate_top=0",
        "--json",
        str(tmp_path / "keep.json"),
        "--emit-c",
        str(tmp_path / "c" / "deep"),
        *(a.replace("{tmp}", str(tmp_path)) for a in extra),
    ]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "No space left on device" in err
    assert "main.c written to" in out  # the failure came after the whole pipeline ran
    if "write_report" not in target:
        assert "report written to" in out  # ... and after the JSON was written (aside)
    assert (tmp_path / "keep.json").read_text(encoding="utf-8") == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json"]


def test_outputs_commit_only_on_success(tmp_path: Path) -> None:
    from tx8lab._outputs import Outputs, write_text_atomic

    def fail_after_writing() -> None:
        with Outputs() as outputs:
            outputs.file("--json", tmp_path / "a.json").write_text("x", encoding="utf-8")
            (outputs.directory("--emit-c", tmp_path / "d" / "e") / "main.c").write_text("y")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail_after_writing()
    assert list(tmp_path.iterdir()) == []
    write_text_atomic(tmp_path / "a.json", "done\n", "--json")
    with Outputs() as outputs:
        (outputs.directory("--emit-c", tmp_path / "d" / "e") / "main.c").write_text("y")
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == "done\n"
    assert (tmp_path / "d" / "e" / "main.c").read_text(encoding="utf-8") == "y"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "d"]


# --------------------------------------------------------------------------- budgets


def test_sw_pipeline_refuses_a_group_above_its_instance_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A 2^62-element Relu: every strategy would unroll ~10^11 instances; refused at once.

    From MLIR text the reader already refuses the type (over 2^40 elements); built in
    Python it reaches group-cost, whose budget refuses it.
    """
    from tx8lab.core.builder import Builder
    from tx8lab.core.passes import build_pipeline
    from tx8lab.core.runner import run_pipeline
    from tx8lab.core.text import print_module
    from tx8lab.errors import Tx8labError
    from tx8lab.hw import TX81

    b = Builder(**{"tx8.model": "huge"})
    x = b.input((1, 1 << 62), "f16")
    b.output(b.op("Relu", x))
    module = b.finish()
    path = tmp_path / "huge.mlir"
    path.write_text(print_module(module), encoding="utf-8")
    code = main(["run", str(path), "--until", "group-cost", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"huge\.mlir:\d+:\d+: .* has 4611686018427387904 elements, more than", err)
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(Tx8labError) as got:
        for _ in run_pipeline(module, build_pipeline(None), TX81):
            pass
    assert re.search(
        r"group %\d+: .* at least [\d,]+ loads .*max_pipeline_instances=1,000,000", str(got.value)
    )
    assert "--set group-cost.max_pipeline_instances=N" in str(got.value)
    assert not (tmp_path / "r.json").exists()


def test_a_model_whose_inputs_and_outputs_overflow_ddr_is_refused_before_any_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A 2^40-element f16 Relu: input and result are 2 TiB each, the tx81 has 64 GiB."""
    from tx8lab.core.builder import Builder
    from tx8lab.core.text import print_module

    b = Builder(**{"tx8.model": "big"})
    b.output(b.op("Relu", b.input((1 << 20, 1 << 20), "f16")))
    path = tmp_path / "big.mlir"
    path.write_text(print_module(b.finish()), encoding="utf-8")
    code = main(["run", str(path), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    # by hand: 2 x 2^40 elements x 2 bytes
    need = f"{2 * 2 * (1 << 40):,}"
    assert f"big.mlir: its inputs and outputs alone need {need} bytes of DDR" in err
    assert "68,719,476,736" in err
    assert "pass" not in err.split("(")[0]  # no pass ran: the message is not a pass's
    assert not (tmp_path / "r.json").exists()
    # a pipeline without opt-ddr (here cut before it) is not refused for it
    assert main(["run", str(path), "--passes", "fold-constants,dce"]) == 0


def test_sw_pipeline_budget_names_the_group_and_the_count() -> None:
    from tx8lab.core.schedule.sw_pipeline import instance_count, sw_pipeline
    from tx8lab.core.schedule.tasks import Buffer, Repeat, ScheduleInput, Task
    from tx8lab.errors import Tx8labError

    body = (Task("ld:x", 0, "ld", 10, writes=("x",)),)
    inp = ScheduleInput(7, (Repeat(1 << 40, body),), {"x": Buffer("x", 0, 64)})
    assert instance_count(inp.nodes) == 1 << 40
    with pytest.raises(Tx8labError, match=r"group %7: .*1,099,511,627,776 task instances"):
        sw_pipeline(inp)
    with pytest.raises(Tx8labError, match=r"max_pipeline_instances=3\b"):
        sw_pipeline(ScheduleInput(7, (Repeat(4, body),), inp.buffers), max_instances=3)
    assert sw_pipeline(ScheduleInput(7, (Repeat(4, body),), inp.buffers), max_instances=4).steps


def test_the_group_cost_knob_reaches_the_pipeline() -> None:
    """A tiny budget refuses tiny_cnn's groups by name; the knob is declared on group-cost."""
    from tx8lab.core.passes.group_cost import GroupCost

    knob = {k.name: k for k in GroupCost.knobs()}["max_pipeline_instances"]
    assert knob.default == 1_000_000
    assert knob.min == 1


def test_a_long_chain_is_refused_above_max_ops(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain above the default --max-ops is refused before the first pass.

    The default is lowered here so the chain stays small; the check is the same.
    """
    from tx8lab.core.builder import Builder
    from tx8lab.core.text import print_module

    assert cli.MAX_OPS == 25_000
    monkeypatch.setattr(cli, "MAX_OPS", 100)
    b = Builder(**{"tx8.model": "chain"})
    x = b.input((1, 64), "f16")
    for _ in range(110):
        x = b.op("Relu", x)
    b.output(x)
    path = tmp_path / "chain.mlir"
    path.write_text(print_module(b.finish()), encoding="utf-8")
    code = main(["run", str(path), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"chain\.mlir: 11\d ops, above --max-ops 100 .*raise --max-ops", err), err
    assert not (tmp_path / "r.json").exists()


def test_alloc_honours_the_time_limit_from_the_first_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first greedy pass reads the clock: a limit spent inside it refuses the problem."""
    from tx8lab.core.schedule import spm_alloc

    rows = ["id,lower,upper,size"] + [f"b{i},{i},{i + 50},{1 + i % 97}" for i in range(3000)]
    problem = tmp_path / "p.csv"
    problem.write_text("\n".join(rows) + "\n", encoding="utf-8")
    spm_alloc._kernel()  # compiled (or loaded) before the clock is replaced
    clock = iter(range(10**9))

    class SlowClock:
        """Each reading is a second later: the limit passes inside the first pass."""

        @staticmethod
        def perf_counter() -> float:
            return float(next(clock))

    monkeypatch.setattr(spm_alloc, "time", SlowClock)
    out = tmp_path / "s.csv"
    argv = ["alloc", str(problem), "--capacity", "1Mi", "--time-limit", "3", "--out", str(out)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(
        r"first greedy packing of 3,000 buffers .* time limit of 3 s.*--time-limit", err
    )
    assert not out.exists()
