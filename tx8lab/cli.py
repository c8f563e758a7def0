"""The ``tx8lab`` command: list the zoo, run the pipeline on a model or on IR text, open JupyterLab.

Spec: DESIGN.md §7. ``main(argv)`` returns the exit code; every user error (a
``Tx8labError``, a missing file, a bad argument) prints one line
``tx8lab: error: ...`` on stderr and exits 2, never a traceback.

Readings chosen:

- ``run MODEL`` takes a zoo name, a ``.onnx`` file or a ``.mlir`` file in the generic
  syntax ``print_module`` writes.
- ``--print-ir-after-all`` writes to stdout, the pass table then goes to stderr, so
  stdout is pure MLIR. The stream opens with a comment line, then each module follows a
  header like MLIR's own, ``// -----// IR Dump After dce (step 1) //----- //``. The header
  begins with mlir-opt's split marker, so ``mlir-opt --allow-unregistered-dialect
  --split-input-file`` reads the stream as one module per pass (plus an empty first
  chunk: mlir-opt rejects a split marker on the very first line, hence the opening
  comment). Constant data above 1 KiB prints as ``dense_resource<__elided__>``.
- ``opt FILE.mlir -p 'pass{knob=value},pass2'`` runs the passes that MLIR pass-pipeline
  text names (:func:`~tx8lab.core.passes.parse_pipeline_spec`) on the file (``-``: stdin)
  with the verifier after each pass (``--no-verify``: without) and prints the resulting
  module on stdout, as ``mlir-opt`` does; golden files' RUN lines call it. The input
  ``.mlir`` of ``run`` and ``opt`` is verified whatever the flag, as mlir-opt's parser
  verifies what it reads: a problem of the input is named as the input's, never a pass's.
- ``--hw PRESET`` picks the chip, ``--hw-set key=value`` overrides one field
  (``tile.spm_bytes=2Mi``).
- ``run --emit-c OUT_DIR`` writes the codegen pass's ``main.c`` and a copy of
  ``tx8_oplib.h`` into OUT_DIR (created when missing), so ``gcc -fsyntax-only
  OUT_DIR/main.c`` compiles there; ``--json`` lists both under ``codegen.files``.
- ``run --report OUT.html`` writes one standalone page
  (:func:`tx8lab.widgets.report_html.write_html_report`); it needs the widgets extra and
  says so when it is missing (core never imports widgets; only this flag does, lazily).
- ``fuse NESTS.mlir`` reads every ``func.func`` of the file (MLIR affine dialect; at least
  one function needs two or more ``affine.for`` nests), prints one table per
  producer/consumer pair on stdout and, with ``--json``, writes the report of
  :func:`tx8lab.kernels.loop_fusion.report`; ``--print-fused`` appends the fused MLIR.
- ``fa --shape B,N,S,D`` models the FlashAttention forward kernel on the chip
  (:mod:`tx8lab.kernels.flash_attention.timeline`, timed by the tile simulator). The
  template comes first: seed 004's rule picks it from the shape (``--template S1S2|S1|B``
  overrides it) and it gives the tiling that is simulated (C block, heads per pass,
  core split), with ``--schedule`` (default ``serial``: one buffer, the board kernel's
  pipelining); ``--block BR,BC`` and ``--split`` override the template's block and core
  split; the seed's C/V ratio (the Vector's 8 x 1024 blocks) is on, ``--no-cv-ratio``
  turns it off. ``--search`` searches block sizes x schedules x splits instead (the
  template's own tiling among them), every candidate under the baseline's issue model
  and readings, and reports the best. The text names the template, how it was chosen,
  the limiting engine and its largest stall. ``--json`` writes ``latency_ms`` (slowest tile's
  kernel body), ``tile_ms``, ``busy_ms`` (keys ``ne ct rdma wdma tdma kcore``, the largest
  over the tiles), ``stall_ms`` (slowest tile, by engine and reason), the split, template
  and tiling key; for the board's shape also the calibration table.
  ``--backward`` adds the backward pass (FAG) at its own template's tiling
  (``--fag-template`` overrides the choice; ``--block`` applies to it too).
- ``testcase OP --seed N --out DIR`` writes seed 001's random test cases of an op kind
  (:mod:`tx8lab.kernels.op_testcase`), case ``i`` of ``--count K`` with seed ``N + i``;
  ``all`` makes one case per kind the generator covers. One line per case: op, drawn
  parameters, ``match`` / ``DIFFER`` / ``FAIL: error`` with the max |diff| and the
  folder. ``--hw`` and ``--hw-set`` choose the chip as for ``run`` and are saved in the
  case. Exit 1 when a case did not match, unless its kind is listed as known failing.
- ``calibrate`` prints the fitted constants and the residual table
  (:mod:`tx8lab.hw.calibrate`), then the board's whole kernels compiled by the default
  pipeline and simulated under that fit (:mod:`tx8lab.kernels.board_cases`), with the
  seconds they took; ``--json`` writes all three (``constants``, ``residuals``,
  ``kernel_cases``).
- **Outputs are all or nothing** (:mod:`tx8lab._outputs`). Every file or folder a command
  writes (``run --json/--trace/--report/--emit-c``, ``fuse --json``, ``fa --json``,
  ``alloc --out``, ``calibrate --out/--write/--json``) is checked before the long work
  (its folder exists and is writable, it is not a folder, no two outputs share a path:
  ``--report /nonexistent/r.html`` fails at once naming the flag and the path), written
  under a temporary name beside it and renamed into place only when the whole command
  succeeded. A failure leaves no truncated file, no empty ``--emit-c`` folder and an
  existing output unchanged. ``testcase --out DIR`` writes each case folder whole
  (:func:`tx8lab.kernels.op_testcase.save_case`); a folder the failed run made is removed.
- **Budgets**, each refused before the work with the size it would take and the knob:
  ``run``/``opt`` ``--max-ops N`` (default :data:`MAX_OPS`: the pipeline takes about a
  second per thousand ops); ``--set group-cost.max_pipeline_instances=N`` (a group's
  software pipeline unrolled); ``fa --max-block-pairs N`` (block pairs modelled); the
  zoo's parameter and tensor limits (:mod:`tx8lab.core.frontends.zoo`, **Bounds**);
  ``alloc --time-limit`` holds from the allocator's first greedy pass.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from tx8lab._outputs import Outputs, check_directory
from tx8lab.errors import Tx8labError

if TYPE_CHECKING:
    from tx8lab.hw.config import ChipConfig

PROG = "tx8lab"
#: The notebook ``tx8lab lab`` opens, relative to the source checkout.
TOUR = Path("notebooks") / "00_tour.ipynb"
#: Constant data larger than this prints elided in IR dumps.
DUMP_ELIDE_BYTES = 1024
#: ``run`` and ``opt`` refuse a module of more ops (``--max-ops``): the pipeline takes
#: about a second per thousand ops, so this bounds a run to about half a minute.
MAX_OPS = 25_000


class _UsageError(Exception):
    """A command-line mistake found by argparse."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


def _pairs(values: Sequence[str] | None, what: str, example: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for text in values or ():
        key, eq, value = text.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise Tx8labError(f"{what} {text!r} is not name=value: write e.g. {example}")
        out[key.strip()] = value.strip()
    return out


def _whole(text: str) -> int:
    """An argparse type: a whole number (ranges checked later; argparse names the flag)."""
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _positive(text: str) -> int:
    """An argparse type: a whole number >= 1 (argparse names the flag)."""
    try:
        value = _whole(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= 1")
    return value


def _shape(name: str, text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.lower().replace(",", "x").split("x"))
    except ValueError:
        dims = ()
    if not dims or any(d < 1 for d in dims):
        raise Tx8labError(f"--input-shape {name}={text}: write the dims as 1x3x224x224")
    return dims


# --------------------------------------------------------------------------- commands


def _cmd_models(args: argparse.Namespace, out: TextIO) -> int:
    from tx8lab.core.zoo import MODELS

    del args
    width = max((len(name) for name in MODELS), default=4) + 2
    out.write(f"{'MODEL':<{width}}SUMMARY\n")
    for name, model in MODELS.items():
        out.write(f"{name:<{width}}{model.summary}\n")
        params = " ".join(f"{k}={_show(spec[0])}" for k, spec in model.params.items())
        out.write(f"{'':<{width}}  params: {params or '(none)'}\n")
    return 0


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _load(
    args: argparse.Namespace, max_fold_bytes: int | None = None
) -> tuple[Any, str, dict[str, str]]:
    """(module, model name, model args) for ``run``'s MODEL argument.

    ``max_fold_bytes``: the ONNX import's folding bound, the pipeline's
    ``fold-constants.max_bytes`` (so ``--set fold-constants.max_bytes=...`` bounds both).
    """
    source: str = args.model
    model_args = _pairs(args.model_arg, "--model-arg", "layers=2")
    shapes = _pairs(args.input_shape, "--input-shape", "input=1x3x224x224")
    suffix = Path(source).suffix.lower()
    if suffix in (".onnx", ".mlir"):
        if model_args:
            raise Tx8labError(
                "--model-arg applies to zoo models; for an ONNX file give "
                "--input-shape name=1x3x224x224"
            )
        path = Path(source)
        if not path.is_file():
            raise Tx8labError(f"{source}: no such file")
        if suffix == ".mlir":
            if shapes:
                raise Tx8labError("--input-shape applies to ONNX files only")
            from tx8lab.core.text import read_module

            return read_module(path), source, {}
        from tx8lab.core.frontends.onnx import load

        input_shapes = {k: _shape(k, v) for k, v in shapes.items()}
        fold = {} if max_fold_bytes is None else {"max_fold_bytes": max_fold_bytes}
        try:
            return load(path, input_shapes=input_shapes or None, **fold), source, {}
        except Tx8labError as err:
            if "max_fold_bytes" in str(err):
                raise Tx8labError(
                    f"{err} (on the command line: --set fold-constants.max_bytes=N)"
                ) from None
            if "input_shapes" not in str(err):
                raise
            raise Tx8labError(
                f"{err} (on the command line: --input-shape NAME=1x3x224x224)"
            ) from err
    if shapes:
        raise Tx8labError("--input-shape applies to ONNX files; zoo models take --model-arg")
    from tx8lab.core.zoo import MODELS, build

    if source not in MODELS:
        raise Tx8labError(
            f"{source!r} is neither a zoo model nor a .onnx/.mlir file; "
            f"zoo models: {', '.join(MODELS)} (see `tx8lab models`)"
        )
    return build(source, **model_args), source, model_args


def _hw_from_args(args: argparse.Namespace) -> tuple[ChipConfig, dict[str, str]]:
    """The preset ``--hw`` names with the ``--hw-set`` overrides, and those overrides."""
    from tx8lab.hw import get_preset

    hw_overrides = _pairs(args.hw_set, "--hw-set", "tile.spm_bytes=2Mi")
    hw = get_preset(args.hw)
    if hw_overrides:
        hw = hw.with_overrides(hw_overrides)
    return hw, hw_overrides


def _add_hw_arguments(parser: argparse.ArgumentParser, preset_help: str, example: str) -> None:
    """``--hw PRESET`` and the repeatable ``--hw-set KEY=VALUE`` of a subcommand."""
    from tx8lab.hw import DEFAULT_PRESET

    parser.add_argument("--hw", default=DEFAULT_PRESET, metavar="PRESET", help=preset_help)
    parser.add_argument(
        "--hw-set",
        action="append",
        metavar="KEY=VALUE",
        help=f"override a hardware field, e.g. {example} (repeatable)",
    )


def _add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The hardware and verifier options of the commands that run passes (run, opt)."""
    from tx8lab.hw import DEFAULT_PRESET, PRESETS

    _add_hw_arguments(
        parser,
        f"hardware preset ({', '.join(sorted(PRESETS))}; default {DEFAULT_PRESET})",
        "tile.spm_bytes=2Mi",
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="skip the verifier after each pass"
    )
    parser.add_argument(
        "--max-ops",
        type=_positive,
        default=MAX_OPS,
        metavar="N",
        help=f"refuse a module of more ops before any pass runs (default {MAX_OPS:,}; the "
        "pipeline takes about a second per thousand ops)",
    )


def _check_max_ops(module: Any, args: argparse.Namespace) -> None:
    """Refuse a module above ``--max-ops`` before any pass runs (module docstring)."""
    if module.num_ops > args.max_ops:
        raise Tx8labError(
            f"{args.model if 'model' in args else args.file}: {module.num_ops:,} ops, above "
            f"--max-ops {args.max_ops:,} (the pipeline takes about a second per thousand "
            "ops); raise --max-ops to run it anyway"
        )


def _check_ddr_floor(module: Any, hw: ChipConfig, model: str) -> None:
    """Refuse, before any pass, a model whose inputs and outputs alone overflow DDR."""
    from tx8lab.core.passes.opt_ddr import ddr_floor_bytes

    need = ddr_floor_bytes(module)
    if need > hw.ddr_bytes:
        raise Tx8labError(
            f"{model}: its inputs and outputs alone need {need:,} bytes of DDR, the "
            f"{hw.name} has {hw.ddr_bytes:,} (opt-ddr would refuse it after every other "
            "pass); use smaller shapes or --hw-set ddr_bytes=..."
        )


def _cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    with Outputs() as outputs:
        return _run(args, out, outputs)


def _run(args: argparse.Namespace, out: TextIO, outputs: Outputs) -> int:
    from tx8lab.core.instruments import Instrument, PrintAfterAll, Progress, Timing, Verify
    from tx8lab.core.passes import build_pipeline, parse_knob_settings
    from tx8lab.core.report import build_report, write_report
    from tx8lab.core.runner import run_pipeline

    hw, hw_overrides = _hw_from_args(args)
    names = [n.strip() for n in args.passes.split(",") if n.strip()] if args.passes else None
    knobs = parse_knob_settings(args.set or [])
    pipeline = build_pipeline(names, knobs)
    if args.execute and not args.emit_c:
        raise Tx8labError("--execute needs --emit-c DIR (where main.c is compiled and kept)")
    if args.report:
        _html_writer()  # the widgets extra, checked before the run
    # every destination is checked (and a temporary made beside it) before the long run
    json_tmp = outputs.file("--json", args.json) if args.json is not None else None
    trace_tmp = outputs.file("--trace", args.trace) if args.trace is not None else None
    report_tmp = outputs.file("--report", args.report) if args.report is not None else None
    c_dir = outputs.directory("--emit-c", args.emit_c) if args.emit_c is not None else None
    fold = next((p for p in pipeline if p.name == "fold-constants"), None)
    module, model, model_args = _load(args, getattr(fold, "max_bytes", None))
    _check_max_ops(module, args)
    if args.until is None and any(p.name == "opt-ddr" for p in pipeline):
        _check_ddr_floor(module, hw, model)
    dump = args.print_ir_after_all
    table = sys.stderr if dump else out
    timing = Timing()
    instruments: list[Instrument] = [timing, *([] if args.no_verify else [Verify()]), Progress()]
    if dump:
        title = (
            f"tx8lab run {model}: the IR after each pass, one module per split "
            "chunk (mlir-opt --split-input-file)"
        )
        instruments.append(PrintAfterAll(out, elide_bytes=DUMP_ELIDE_BYTES, title=title))
    for note in module.import_notes:
        sys.stderr.write(f"note: {note}\n")
    steps = list(run_pipeline(module, pipeline, hw, until=args.until, instruments=instruments))
    table.write(f"{model}: {module.num_ops} ops, hw {hw.name}\n")
    table.write(
        f"  {'#':>2}  {'pass':<24}{'wall ms':>9}  {'changed':<8}{'ops':>7}{'decisions':>11}\n"
    )
    for step in steps:
        table.write(
            f"  {step.index:>2}  {step.name:<24}{timing.seconds[step.index] * 1e3:>9.2f}  "
            f"{'yes' if step.changed else 'no':<8}{step.num_ops_after:>7}"
            f"{len(step.decisions):>11}\n"
        )
    final = steps[-1].result.module if steps else module

    @functools.cache
    def program() -> Any:
        """The Program of the final module, built once for the report and the trace."""
        from tx8lab.core.program import build_program

        return build_program(final, hw)

    emitted: list[Path] = []
    written: list[Path] = []  # where the emitted files land once the run succeeded
    if c_dir is not None:
        from tx8lab.core.passes.codegen import write_c

        emitted = write_c(c_dir, steps)
        written = [Path(args.emit_c) / p.name for p in emitted]
        size = emitted[0].stat().st_size
        table.write(f"main.c written to {written[0]} ({size} bytes) with {emitted[1].name}\n")
    status = 0
    if args.execute:
        from tx8lab.core.execute import execute_module

        execution = execute_module(
            final, hw, directory=c_dir, main_c=emitted[0].read_text(encoding="utf-8")
        )
        out.write(execution.summary() + "\n")
        status = 0 if execution.ok else 1
    if args.json or args.report:
        report = build_report(
            module,
            steps,
            hw,
            model=model,
            model_args=model_args,
            knobs=knobs,
            hw_overrides=hw_overrides,
            until=args.until,
            emitted_files=written,
            program=program,
        )
    if json_tmp is not None:
        write_report(json_tmp, report)
        table.write(f"report written to {args.json}\n")
    for which in args.explain or []:
        out.write(_explain_group(steps, hw, which) + "\n")
    if trace_tmp is not None:
        note = _write_trace(str(trace_tmp), steps, hw, program, final)
        table.write(f"trace written to {args.trace} (open it in ui.perfetto.dev){note}\n")
    if report_tmp is not None:
        seconds = _write_html(str(report_tmp), module, steps, hw, report)
        table.write(f"HTML report written to {args.report} in {seconds:.2f} s\n")
    return status


def _explain_group(steps: Sequence[Any], hw: Any, which: str) -> str:
    """``--explain``: one group's plan beside its simulated run (``slowest``: the costliest)."""
    from tx8lab.core.schedule.estimate import explain

    cost = next((s for s in steps if s.name == "group-cost"), None)
    if cost is None:
        raise Tx8labError("--explain needs the group-cost pass; run the default pipeline")
    runs = cost.result.artifacts["runs"]
    entries = {int(e["id"]): e for e in cost.result.artifacts["groups"]}
    if which == "slowest":
        gid = max(entries, key=lambda g: (entries[g]["cycles"], -g))
    else:
        try:
            gid = int(which.lstrip("%"))
        except ValueError:
            gid = -1
        if gid not in entries:
            shown = ", ".join(f"%{g}" for g in list(entries)[:12])
            raise Tx8labError(
                f"--explain {which!r}: no such group; give a group id ({shown}"
                f"{' ...' if len(entries) > 12 else ''}) or 'slowest'"
            )
    run = runs[gid]
    return explain(run.estimate, inp=run.input, hw=hw)


def _cmd_opt(args: argparse.Namespace, out: TextIO) -> int:
    from tx8lab.core.instruments import Verify
    from tx8lab.core.passes import parse_pipeline_spec
    from tx8lab.core.runner import run_pipeline
    from tx8lab.core.text import check_input, decode_source, parse_module, print_module, read_source

    passes = parse_pipeline_spec(args.pass_pipeline)
    hw, _ = _hw_from_args(args)
    if args.file == "-":
        where = "<stdin>"
        raw = getattr(sys.stdin, "buffer", None)
        text = decode_source(raw.read(), where) if raw is not None else sys.stdin.read()
    else:
        text, where = read_source(args.file), args.file
    module = parse_module(text, where)
    _check_max_ops(module, args)
    module = check_input(module, where)
    instruments = [] if args.no_verify else [Verify()]
    for step in run_pipeline(module, passes, hw, instruments=instruments):
        module = step.after
    out.write(print_module(module))
    out.write("\n")
    return 0


def _html_writer() -> Callable[..., dict[str, float]]:
    """The standalone page's writer, or an error naming the widgets extra."""
    try:
        # the one lazy widgets import: only --report reaches it, core stays widget-free
        from tx8lab.widgets.report_html import write_html_report  # noqa: TID251
    except ImportError as err:
        raise Tx8labError(
            f"--report needs the widgets extra ({err.name or err} is missing): "
            "pip install 'tx8lab[widgets]'"
        ) from err
    return write_html_report


def _write_html(path: str, module: Any, steps: Sequence[Any], hw: Any, report: Any) -> float:
    """The standalone HTML page (needs the widgets extra); returns the seconds it took."""
    return _html_writer()(path, module, steps, hw, report)["total"]


def _write_trace(
    path: str, steps: Sequence[Any], hw: Any, program: Callable[[], Any], final: Any
) -> str:
    """The Perfetto trace of the model's groups, from the group-cost step.

    When the pipeline ran through opt-ddr (every load and store has its DDR address), each
    slot also carries the command main.c issues for it on tile 0, and the program played
    by the tile simulator follows the plan (one process per tile, stalls shaded by
    reason); returns a note for the user saying whether it does and why not.
    """
    from tx8lab.core.schedule.trace import model_trace, sim_events, write_trace
    from tx8lab.core.simulate import simulate_program

    cost = next((s for s in steps if s.name == "group-cost"), None)
    if cost is None:
        raise Tx8labError(
            "--trace needs the group-cost pass (it schedules the groups); it did not run "
            "(check --passes / --until)"
        )
    artifacts = cost.result.artifacts
    timelines = [artifacts["runs"][entry["id"]].timeline for entry in artifacts["groups"]]
    commands = None
    played = None
    if not any(s.name == "opt-ddr" for s in steps):
        note = (
            "; the plan only, no commands and no simulated run in it: the pipeline stopped "
            "before opt-ddr placed DDR"
        )
    else:
        try:
            commands = program().command_args(tile=0)
            played = simulate_program(program(), final, hw)
            note = (
                "; each slot shows its main.c command on tile 0, and the simulated run "
                "follows the plan (stalls shaded by reason)"
            )
        except Tx8labError as err:
            note = f"; the plan only, no commands in it: {err}"
    trace = model_trace(timelines, hw, need_barrier=artifacts["need_barrier"], commands=commands)
    if played is not None:
        first = 1 + max((e["pid"] for e in trace["traceEvents"]), default=-1)
        trace["traceEvents"].extend(sim_events(played, pid_base=first))
        trace["otherData"]["simulated_body_cycles"] = played.body_cycles
    write_trace(trace, path)
    return note


def _cmd_fuse(args: argparse.Namespace, out: TextIO) -> int:
    from tx8lab.core.text import read_source
    from tx8lab.kernels.loop_fusion import (
        DEFAULT_TOLERANCE,
        FusionOptions,
        parse_functions,
        report,
    )

    path = Path(args.nests)
    try:
        funcs = parse_functions(
            read_source(path), str(path), max_depth=args.max_depth, max_nests=args.max_nests
        )
    except Tx8labError as err:
        for word, flag in (("max_depth", "--max-depth"), ("max_nests", "--max-nests")):
            if f"{word}=N" in str(err):
                raise Tx8labError(f"{err} (on the command line: {flag} N)") from None
        raise
    if all(len(f.nests) < 2 for f in funcs):
        names = ", ".join(f"@{f.name} ({len(f.nests)})" for f in funcs)
        raise Tx8labError(
            f"{path}: fusion needs a function with two or more affine.for nests; "
            f"nests per function: {names}"
        )
    hw, _ = _hw_from_args(args)
    tolerance = DEFAULT_TOLERANCE if args.compute_tolerance is None else args.compute_tolerance
    if not 0.0 <= tolerance < float("inf"):
        raise Tx8labError(
            f"--compute-tolerance {tolerance}: give a fraction >= 0, e.g. 0.3 (30% extra work)"
        )
    options = FusionOptions(compute_tolerance=tolerance, maximal=args.maximal, mode=args.mode)
    with Outputs() as outputs:
        json_tmp = outputs.file("--json", args.json) if args.json is not None else None
        return _fuse_report(args, out, funcs, options, hw, report, json_tmp)


def _fuse_report(
    args: argparse.Namespace,
    out: TextIO,
    funcs: Any,
    options: Any,
    hw: Any,
    report: Callable[..., Any],
    json_tmp: Path | None,
) -> int:
    data = report(funcs, options, hw)
    for func in data["functions"]:
        out.write(f"@{func['function']}: {len(func['nests'])} nests, hw {hw.name}\n")
        for pair in func["pairs"]:
            memrefs = ", ".join(pair["memrefs"])
            out.write(
                f"  {pair['src']} -> {pair['dst']} via {memrefs}: "
                f"src cost {pair['src_cost']}, dst cost {pair['dst_cost']}, "
                f"tolerance {100 * pair['tolerance_used']:.2f}%"
                f"{' (producer cycle)' if pair['cyclic_producer'] else ''}\n"
            )
            out.write(
                f"    {'depth':>5}  {'legal':<6}{'slice trips':<22}{'fused cost':>14}"
                f"{'extra':>10}{'storage':>9}{'private B':>11}\n"
            )
            for row in pair["depths"]:
                trips = ",".join(
                    "?" if t is None else str(t) for t in row["slice_trip_counts"] or []
                )
                extra = row["additional_compute_fraction"]
                storage = row["storage_reduction"]
                out.write(
                    f"    {row['depth']:>5}  {'yes' if row['legal'] else 'no':<6}"
                    f"{trips or '-':<22}{_show_num(row['fused_cost']):>14}"
                    f"{'-' if extra is None else f'{100 * extra:.2f}%':>10}"
                    f"{'-' if storage is None else f'{storage:.2f}x':>9}"
                    f"{_show_num(row['private_bytes']):>11}\n"
                )
            chosen = "null" if pair["chosen_depth"] is None else pair["chosen_depth"]
            out.write(f"    chosen_depth: {chosen} - {pair['decision']}\n")
        steps = func["fusion"]["steps"]
        done = "; ".join(f"{s['src']} into {s['dst']} at depth {s['depth']}" for s in steps)
        out.write(f"  fusion ({options.mode}): {done or 'nothing fused'}\n")
        if args.print_fused:
            out.write(func["fusion"]["mlir"])
    if json_tmp is not None:
        from tx8lab.core.report import write_report

        write_report(json_tmp, data)
        out.write(f"report written to {args.json}\n")
    return 0


#: How ``tx8lab fa`` names a template's source (``FaModel.template_source``).
_TEMPLATE_SOURCE = {
    "shape": "seed 004's choice by shape",
    "knob": "given by --template",
    "block": "the one its block keeps",
}


def _cmd_fa(args: argparse.Namespace, out: TextIO) -> int:
    shape = _ints(args.shape, 4, "--shape", "B,N,S,D e.g. 1,28,2048,128")
    hw, _ = _hw_from_args(args)
    n = shape[1]
    if args.s2 is not None and args.s2 < 1:
        raise Tx8labError(f"--s2 {args.s2}: the key length S2 must be a whole number >= 1")
    if args.kv_heads is not None and (args.kv_heads < 1 or n % args.kv_heads):
        raise Tx8labError(
            f"--kv-heads {args.kv_heads}: the key/value heads N2={args.kv_heads} must be a "
            f"divisor >= 1 of the head count N={n} (grouped-query attention)"
        )
    block = _ints(args.block, 2, "--block", "BR,BC e.g. 256,256") if args.block else None
    with Outputs() as outputs:
        json_tmp = outputs.file("--json", args.json) if args.json is not None else None
        return _fa(args, out, shape, block, hw, json_tmp)


def _fa(
    args: argparse.Namespace,
    out: TextIO,
    shape: tuple[int, ...],
    block: tuple[int, ...] | None,
    hw: Any,
    json_tmp: Path | None,
) -> int:

    from tx8lab.kernels.flash_attention.timeline import (
        BOARD,
        SCHEDULES,
        FaConfig,
        calibration,
        model,
        schedule_name,
        search,
    )

    b, n, s, d = shape
    max_pairs = args.max_block_pairs
    pp, di = SCHEDULES[args.schedule]
    cfg = FaConfig(
        b=b, n1=n, s1=s, d=d, s2=args.s2, n2=args.kv_heads, causal=args.causal,
        dtype=args.dtype, pingpong=pp, double_issue=di, sync_issue=args.sync_issue,
        split=args.split, vector_dtype=args.vector_dtype, transpose=args.transpose,
        io_layout=args.io_layout, template=args.template, fag_template=args.fag_template,
        cv_ratio=not args.no_cv_ratio, block=(block[0], block[1]) if block else None,
    )  # fmt: skip
    data: dict[str, Any]
    if not args.search:
        result = model(cfg, hw, max_block_pairs=max_pairs)
        data = result.as_dict()
        data["searched"] = False
        out.write(f"FlashAttention forward {shape} causal={args.causal} on {hw.name}\n")
    else:
        result, tried = search(cfg, hw, max_block_pairs=max_pairs)
        data = result.as_dict()
        data["searched"] = True
        data["tried"] = [
            {
                "block": list(m.config.c_block),
                "schedule": schedule_name(m.config),
                "split": m.config.split,
                "template": m.template,
                "latency_ms": m.latency_ms,
                "limiting_engine": m.limiting_engine,
            }
            for m in sorted(tried, key=lambda m: m.latency_ms)
        ]
        issue = "kernel core joining on inputs" if cfg.sync_issue else "asynchronous issue"
        out.write(f"searched {len(tried)} tilings (all with {issue}); best:\n")
    c = result.config
    engine, reason, ms = result.top_stall
    limit = result.limiting_engine
    limit_ms = result.tiles.tile_busy_ms(result.busiest_tile)[limit]
    busy = ", ".join(f"{k} {v:.3f}" for k, v in result.busy_ms.items())
    waits = ", ".join(f"{k} {v:.3f}" for k, v in result.waiting_on().items())
    waits = f" (waiting on {waits})" if waits and reason == "dependency" else ""
    br, bc = c.c_block
    chosen = _TEMPLATE_SOURCE[result.template_source]
    ratio = f"V block {c.v_rows} rows" if c.v_rows is not None else "off"
    out.write(
        f"  template {result.template} ({chosen}), tiling key {result.tiling_key}\n"
        f"  block {br}x{bc}, heads per pass {c.heads_per_pass}, schedule {schedule_name(c)}, "
        f"split {c.split}, K/V resident {result.kv_resident}, SPM {result.spm_bytes:,} B\n"
        f"  vector math {c.vector_dtype}, C/V ratio {ratio}, K^T by {c.transpose}, "
        f"DDR layout {c.io_layout}\n"
        f"  latency {result.latency_ms:.3f} ms (slowest tile {result.busiest_tile}, "
        f"{max(result.tile_pairs)} block pairs on the busiest, load balance "
        f"{100 * result.load_balance:.1f}%)\n"
        f"  limiting engine {limit} (busy {limit_ms:.3f} ms on the slowest tile); "
        f"largest stall: {engine} {reason} {ms:.3f} ms{waits}\n"
        f"  busy ms (largest over tiles): {busy}\n"
    )
    if args.backward:
        from tx8lab.kernels.flash_attention.backward import fag_model

        try:
            bwd = fag_model(cfg, hw, max_block_pairs=max_pairs)
        except Tx8labError as err:
            data["backward"] = {"error": str(err)}
            out.write(f"  backward at this tiling: {err}\n")
        else:
            data["backward"] = bwd.as_dict()
            engine, reason, ms = bwd.top_stall
            busy = ", ".join(f"{k} {v:.3f}" for k, v in bwd.busy_ms.items())
            bc_ = bwd.config.c_block
            out.write(
                f"  backward template {bwd.template} "
                f"({_TEMPLATE_SOURCE[bwd.template_source]}), block {bc_[0]}x{bc_[1]}, "
                f"heads per pass {bwd.config.heads_per_pass}, split {bwd.config.split}\n"
                f"  backward: latency {bwd.latency_ms:.3f} ms, limiting "
                f"engine {bwd.limiting_engine}, largest stall {engine} {reason} {ms:.3f} ms\n"
                f"    busy ms {busy}\n"
            )
    if shape == BOARD["shape"] and args.causal:
        rows = calibration(hw)
        data["calibration"] = rows
        out.write("  calibration (board tiling 256x256, serial, split bn):\n")
        for row in rows:
            out.write(
                f"    {row['quantity']:<58}model {row['model_ms']:.3f} ms  "
                f"board {row['board_ms']:.3f} ms  ratio {row['ratio']:.2f}\n"
            )
    if json_tmp is not None:
        from tx8lab.core.report import write_report

        write_report(json_tmp, data)
        out.write(f"report written to {args.json}\n")
    return 0


def _ints(text: str, count: int, flag: str, example: str) -> tuple[int, ...]:
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != count or any(v < 1 for v in values):
        raise Tx8labError(f"{flag} {text!r}: write {count} positive integers, {example}")
    return values


def _show_num(value: Any) -> str:
    return "-" if value is None else str(value)


def _cmd_testcase(args: argparse.Namespace, out: TextIO) -> int:
    from tx8lab.kernels.op_testcase import generate

    _, overrides = _hw_from_args(args)
    specs = [args.hw, *(f"{k}={v}" for k, v in overrides.items())]
    # each case folder is written whole and renamed into place (op_testcase.save_case);
    # the folder itself is checked first and, when this run made it, removed if it failed
    folder = check_directory("--out", args.out)
    made_dirs = [d for d in (folder.absolute(), *folder.absolute().parents) if not d.exists()]
    status = 0
    try:
        for made in generate(args.op, args.seed, args.out, count=args.count, hw=specs):
            out.write(made.line() + "\n")
            if not made.case.ok and made.case.known_failure() is None:
                status = 1
    except BaseException:
        for d in made_dirs:  # deepest first; only the empty folders this run made
            try:
                d.rmdir()
            except OSError:
                break
        raise
    return status


def _cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    from tx8lab.hw.calibrate import (
        apply,
        calibration_path,
        fit,
        read_board,
        residuals,
        table,
        write_calibration,
    )

    hw, _ = _hw_from_args(args)
    with Outputs() as outputs:
        fit_tmp = None
        if args.out is not None:
            fit_tmp = outputs.file("--out", args.out)
        elif args.write:
            fit_tmp = outputs.file("--write", calibration_path())
        json_tmp = outputs.file("--json", args.json) if args.json is not None else None
        rows = read_board(Path(args.board) if args.board else None)
        fits = fit(rows, hw)
        res = residuals(rows, apply(hw, fits), fits)
        out.write(table(fits, res) + "\n")
        if fit_tmp is not None:
            write_calibration(fits, fit_tmp)
            out.write(f"fitted constants written to {args.out or calibration_path()}\n")
        return _calibrate_cases(args, out, hw, rows, fits, res, json_tmp)


def _calibrate_cases(
    args: argparse.Namespace,
    out: TextIO,
    hw: Any,
    rows: Any,
    fits: Any,
    res: Any,
    json_tmp: Path | None,
) -> int:
    import json
    import time

    from tx8lab.hw.calibrate import apply, to_json
    from tx8lab.kernels import board_cases

    # the whole kernels are predictions under the fit: compiled, played, never fitted on
    start = time.perf_counter()
    cases = board_cases.case_rows(rows, apply(hw, fits), fits)
    out.write("\n" + board_cases.table(cases) + "\n")
    out.write(
        f"(kernel cases compiled, built and simulated in {time.perf_counter() - start:.1f} s)\n"
    )
    if json_tmp is not None:
        report = to_json(fits)
        report["residuals"] = [
            {
                "row": r.ref,
                "what": r.what,
                "engine": r.engine,
                "measured_ns": r.measured_ns,
                "modelled_ns": r.modelled_ns,
                "ratio": r.ratio,
                "fitted": r.fitted,
                "how": r.how,
            }
            for r in res
        ]
        report["kernel_cases"] = [r.to_json() for r in cases]
        json_tmp.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        out.write(f"report written to {args.json}\n")
    return 0


def _cmd_lab(args: argparse.Namespace, out: TextIO) -> int:
    del out
    notebook = Path(__file__).resolve().parent.parent / TOUR
    if not notebook.is_file():
        raise Tx8labError(
            f"{TOUR} not found next to the tx8lab package ({notebook}): "
            "`tx8lab lab` runs from a source checkout of tx8lab"
        )
    exe = shutil.which("jupyter-lab") or shutil.which(
        "jupyter-lab", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        raise Tx8labError(
            "JupyterLab is not installed: pip install 'tx8lab[widgets]' (or pip install jupyterlab)"
        )
    command = [exe, str(notebook), *(["--no-browser"] if args.no_browser else [])]
    return subprocess.call(command)


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation tools)."""
    from tx8lab.hw import PRESETS

    parser = _Parser(prog=PROG, description="Explain and model the TX8 NPU backend compiler.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    models = sub.add_parser("models", help="list the model zoo with parameters")
    models.set_defaults(func=_cmd_models)

    from tx8lab.core.passes import DEFAULT_PIPELINE, describe_passes

    epilog = "passes and their knobs (--set PASS.KNOB=VALUE):\n" + "\n".join(
        f"  {line}" for line in describe_passes()
    )
    epilog += f"\ndefault pipeline: {', '.join(DEFAULT_PIPELINE)}"
    run = sub.add_parser(
        "run",
        help="run the pass pipeline on a model",
        description="Run the pass pipeline on a zoo model or a model file.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "model",
        metavar="MODEL|FILE.onnx",
        help="zoo model name (see `tx8lab models`), a .onnx or a .mlir file",
    )
    run.add_argument(
        "--model-arg",
        action="append",
        metavar="NAME=VALUE",
        help="zoo model parameter, e.g. layers=2 (repeatable)",
    )
    run.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=1x3x224x224",
        help="fix an ONNX input's dynamic shape (repeatable)",
    )
    run.add_argument(
        "--set",
        action="append",
        metavar="PASS.KNOB=VALUE",
        help="set a pass knob, e.g. fold-constants.max_bytes=64Ki (repeatable)",
    )
    run.add_argument(
        "--passes",
        metavar="P1,P2,...",
        help="comma-separated pass names instead of the default pipeline",
    )
    run.add_argument("--until", metavar="PASS", help="stop after this pass")
    run.add_argument(
        "--print-ir-after-all",
        action="store_true",
        help="print the IR after each pass to stdout (MLIR generic syntax)",
    )
    run.add_argument("--json", metavar="OUT.json", help="write the JSON report")
    run.add_argument(
        "--trace",
        metavar="OUT.json",
        help="write a Chrome/Perfetto trace of the scheduled groups (needs group-cost)",
    )
    run.add_argument(
        "--explain",
        action="append",
        metavar="GROUP",
        help="print a group's plan beside its simulated run: engines, the limiting engine, "
        "the stall that cost most (a group id such as 12, or 'slowest'; repeatable)",
    )
    run.add_argument(
        "--emit-c",
        metavar="OUT_DIR",
        help="write the codegen pass's main.c and the tx8_oplib.h header into OUT_DIR",
    )
    run.add_argument(
        "--execute",
        action="store_true",
        help="with --emit-c: compile main.c and run it on the host model of the chip, then "
        "compare its outputs with the interpreter (non-zero exit when they differ)",
    )
    run.add_argument(
        "--report",
        metavar="OUT.html",
        help="write a standalone HTML page: passes, graph, groups, timelines, SPM Gantts",
    )
    _add_pipeline_arguments(run)
    run.set_defaults(func=_cmd_run)

    opt = sub.add_parser(
        "opt",
        help="run passes on an MLIR file and print the result (golden RUN lines)",
        description=(
            "Parse a module in MLIR generic syntax, run the passes the pipeline text "
            "names, print the resulting module to stdout."
        ),
        epilog=epilog.replace("(--set PASS.KNOB=VALUE)", "(-p 'PASS{KNOB=VALUE}')"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    opt.add_argument("file", metavar="FILE.mlir", help="the input module; - reads stdin")
    opt.add_argument(
        "-p",
        "--pass-pipeline",
        required=True,
        metavar="PIPELINE",
        help="passes with knobs, e.g. 'fold-constants{max_bytes=4Ki},dce'",
    )
    _add_pipeline_arguments(opt)
    opt.set_defaults(func=_cmd_opt)

    from tx8lab.kernels.loop_fusion.text import MAX_NEST_DEPTH as FUSE_MAX_DEPTH
    from tx8lab.kernels.loop_fusion.text import MAX_NESTS as FUSE_MAX_NESTS

    fuse = sub.add_parser(
        "fuse",
        help="explore affine loop fusion (MLIR's LoopFusion) on loop nests",
        description=(
            "Analyse every producer/consumer pair of affine.for nests in an MLIR file the "
            "way mlir-opt --affine-loop-fusion does: slice bounds and trip counts, costs, "
            "extra work and storage reduction per depth, and the chosen depth."
        ),
    )
    fuse.add_argument("nests", metavar="NESTS.mlir", help="MLIR file with affine.for nests")
    fuse.add_argument("--json", metavar="OUT.json", help="write the JSON report")
    fuse.add_argument(
        "--compute-tolerance",
        type=float,
        default=None,
        metavar="FRACTION",
        help="extra work tolerated (MLIR's compute-tolerance; default 0.30f)",
    )
    fuse.add_argument(
        "--maximal", action="store_true", help="fuse at the deepest legal depth (maximal=true)"
    )
    fuse.add_argument(
        "--mode",
        choices=("greedy", "producer"),
        default="greedy",
        help="greedy (without sibling fusion) or producer (mode=producer); default greedy",
    )
    fuse.add_argument(
        "--print-fused", action="store_true", help="print the fused function (MLIR) too"
    )
    fuse.add_argument(
        "--max-depth",
        type=_positive,
        default=FUSE_MAX_DEPTH,
        metavar="N",
        help=f"refuse a loop nest deeper than N loops (default {FUSE_MAX_DEPTH}; the analysis "
        "grows with about the 4th power of the depth)",
    )
    fuse.add_argument(
        "--max-nests",
        type=_positive,
        default=FUSE_MAX_NESTS,
        metavar="N",
        help=f"refuse a function of more than N nests (default {FUSE_MAX_NESTS}; the analysis "
        "grows with the square of their number)",
    )
    _add_hw_arguments(
        fuse,
        f"hardware preset for the SPM view ({', '.join(sorted(PRESETS))})",
        "tile.spm_bytes=2Mi",
    )
    fuse.set_defaults(func=_cmd_fuse)

    from tx8lab.kernels.flash_attention.templates import BACKWARD_TEMPLATES, FORWARD_TEMPLATES
    from tx8lab.kernels.flash_attention.timeline import MAX_BLOCK_PAIRS as FA_MAX_BLOCK_PAIRS

    fa = sub.add_parser(
        "fa",
        help="model the FlashAttention forward kernel on the chip (per-tile command streams)",
        description=(
            "Model FlashAttention forward on the TX8 tile simulator: the template seed 004 "
            "chooses by shape gives the tiling (C/V tiling, core split), then ping-pong, "
            "cube double issue and layout moves. --search searches the tilings (every "
            "candidate modelled like the baseline)."
        ),
    )
    fa.add_argument("--shape", required=True, metavar="B,N,S,D", help="query shape (BNSD)")
    fa.add_argument("--causal", action="store_true", help="causal mask (prefill)")
    fa.add_argument(
        "--template",
        choices=FORWARD_TEMPLATES,
        default=None,
        help="forward template (default: seed 004's choice by shape); it gives the tiling",
    )
    fa.add_argument(
        "--fag-template",
        choices=BACKWARD_TEMPLATES,
        default=None,
        help="backward template for --backward (default: seed 004's choice by priority)",
    )
    fa.add_argument(
        "--block",
        metavar="BR,BC",
        help="NE block (rows of Q, columns of K); default the template's",
    )
    fa.add_argument(
        "--no-cv-ratio",
        action="store_true",
        help="one CT command over the whole C block (default: seed 004's 8 x 1024 V blocks)",
    )
    fa.add_argument(
        "--search",
        action="store_true",
        help="search block sizes x schedules x splits instead of the template's tiling",
    )
    fa.add_argument(
        "--schedule",
        choices=("serial", "pingpong", "double-issue"),
        default="serial",
        help="pipelining (default serial: one buffer, as the board kernel)",
    )
    fa.add_argument(
        "--split",
        choices=("fused", "bn", "bn2", "bns1"),
        default=None,
        help="core split (default the template's): contiguous ranges of the fused axes "
        "(fused), whole heads (bn), whole KV heads (bn2), row blocks by weight (bns1)",
    )
    fa.add_argument("--dtype", choices=("bf16", "f16", "f32"), default="bf16")
    fa.add_argument(
        "--vector-dtype",
        choices=("f32", "bf16", "f16"),
        default="f32",
        help="element type of the scores and of the CT's math (default f32, seed 004)",
    )
    fa.add_argument(
        "--transpose",
        choices=("tdma", "ct", "ne"),
        default="tdma",
        help="how K^T is made: TDMA GatherScatter (default), CT Transpose, the NE (what-if)",
    )
    fa.add_argument(
        "--io-layout",
        choices=("nd", "ncx"),
        default="nd",
        help="layout of Q/K/V/O in DDR (nd: TDMA moves in SPM, default; ncx: none)",
    )
    fa.add_argument(
        "--sync-issue",
        action="store_true",
        help="what-if: the kernel core joins on cross-engine inputs before issuing",
    )
    fa.add_argument("--s2", type=_whole, default=None, help="key length (default S)")
    fa.add_argument(
        "--kv-heads",
        type=_whole,
        default=None,
        help="key/value heads N2 (GQA; a divisor of N)",
    )
    fa.add_argument(
        "--max-block-pairs",
        type=_positive,
        default=FA_MAX_BLOCK_PAIRS,
        metavar="N",
        help="refuse a shape and tiling with more block pairs (B x N x row blocks x "
        f"column blocks) before modelling it (default {FA_MAX_BLOCK_PAIRS:,})",
    )
    fa.add_argument(
        "--backward", action="store_true", help="also model the backward pass at that tiling"
    )
    fa.add_argument("--json", metavar="OUT.json", help="write the JSON report")
    _add_hw_arguments(
        fa,
        f"hardware preset ({', '.join(sorted(PRESETS))})",
        "tile.kcore_issue_s=0.5e-6",
    )
    fa.set_defaults(func=_cmd_fa)

    from tx8lab.alloc_cli import add_arguments as alloc_arguments
    from tx8lab.alloc_cli import cmd_alloc

    alloc = sub.add_parser(
        "alloc",
        help="the SPM allocator on a MiniMalloc-format problem (peak, lower bound, time)",
        description=(
            "Place the buffers of a MiniMalloc CSV (id,lower,upper,size; half-open "
            "lifetimes) within the capacity; write id,offset rows."
        ),
    )
    alloc_arguments(alloc)
    alloc.set_defaults(func=cmd_alloc)

    testcase = sub.add_parser(
        "testcase",
        help="random test cases of an op: reference, emitted main.c executed, files (seed 001)",
        description=(
            "Generate seed 001's random test cases of one op kind: random dims, dtype, "
            "layout and attributes within what the op supports, inputs in safe ranges, the "
            "default pipeline and its main.c executed on the host model against the "
            "interpreter; each case is written to DIR/<Kind>_s<seed>/ (.bin files, "
            "case.json, main.c). Exit 1 when a case does not match (failures listed in "
            "KNOWN_FAILING excepted)."
        ),
    )
    testcase.add_argument(
        "op", metavar="OP", help="op kind (MatMul or tx8be.MatMul), or all (every kind)"
    )
    testcase.add_argument("--seed", type=int, default=0, help="seed of the first case (default 0)")
    testcase.add_argument(
        "--count", type=int, default=1, help="cases per kind, seeds SEED.. (default 1)"
    )
    testcase.add_argument("--out", required=True, metavar="DIR", help="where the cases go")
    _add_hw_arguments(
        testcase,
        f"hardware preset ({', '.join(sorted(PRESETS))})",
        "tile.spm_bytes=72Ki (a small SPM forces splits)",
    )
    testcase.set_defaults(func=_cmd_testcase)

    calibrate = sub.add_parser(
        "calibrate",
        help="fit the engine laws on the board measurements and print the residuals",
        description=(
            "Fit the simulator's unknown engine-law constants on the board measurements "
            "shipped in tx8lab/hw/board (closed form or least squares, each from named rows), "
            "then time every row the model can and print measured, modelled and their ratio; "
            "then compile the board's whole kernels (kernels.csv) with the default pipeline, "
            "simulate them and print their kernel time and per-engine busy time beside the "
            "board's. "
            "--write stores the fit in tx8lab/hw/calibration.json, which the tx81 preset reads."
        ),
    )
    calibrate.add_argument(
        "--write", action="store_true", help="write the fit into the shipped calibration.json"
    )
    calibrate.add_argument("--out", metavar="FILE.json", help="write the fit to FILE instead")
    calibrate.add_argument(
        "--json", metavar="OUT.json", help="write fit, residuals and kernel cases as JSON"
    )
    calibrate.add_argument(
        "--board", metavar="DIR", help="board measurements (micro.csv, kernels.csv) to fit on"
    )
    _add_hw_arguments(
        calibrate,
        f"hardware preset whose vendor rates the laws use ({', '.join(sorted(PRESETS))})",
        "tile.ct_f16_ops_per_s=64G",
    )
    calibrate.set_defaults(func=_cmd_calibrate)

    lab = sub.add_parser("lab", help=f"open JupyterLab on {TOUR.as_posix()}")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.set_defaults(func=_cmd_lab)
    return parser


def _one_line(message: str) -> str:
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if not lines:
        return "unknown error"
    return lines[0] + (" " + "; ".join(lines[1:]) if len(lines) > 1 else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tx8lab`` command; returns the exit code (0 ok, 2 user error)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        code: int = args.func(args, sys.stdout)
        return code
    except _UsageError as err:
        message = str(err)
    except Tx8labError as err:
        message = _one_line(str(err))
    except BrokenPipeError:
        return 0
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        message = f"{where}{err.strerror or err}"
    except SystemExit as err:  # --help
        return err.code if isinstance(err.code, int) else 0
    except KeyboardInterrupt:
        return 130
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


__all__ = ["build_parser", "main"]
