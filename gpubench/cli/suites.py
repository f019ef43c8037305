"""`gpubench run SUITE` and `gpubench inspect SUITE`: one subcommand per suite (or suite or
kernel file), its options made from the suite's declared parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gpubench.cli.common import (
    EXIT_CODES_HELP,
    TIMING_KEYS,
    err_console,
    execute,
    out_console,
    output_options,
    param_option,
    spread_from,
    timing_options,
)

if TYPE_CHECKING:
    from gpubench.model.benchmark import Benchmark


def _run_options(bench: Benchmark) -> list[Any]:
    """The options of `gpubench run SUITE` besides the suite's parameters and the shared ones."""
    return [
        click.option(
            "--variant",
            "-v",
            "variants",
            multiple=True,
            type=click.Choice(list(bench.variant_names)),
            help="Variant to run (repeatable; default: all).",
        ),
        click.option(
            "--baseline",
            type=click.Choice(list(bench.variant_names)),
            help=f"Variant the speedup is measured against [default: {bench.baseline}].",
        ),
        click.option(
            "--timeline",
            "timeline_path",
            type=click.Path(dir_okay=False),
            default=None,
            is_flag=False,
            flag_value="",
            help="Record one run's operations per stream (suites with streams) and print "
            "them; with FILE, also draw a Gantt chart there (PNG, needs matplotlib).",
        ),
        click.option(
            "--force",
            is_flag=True,
            help="Start a new --jsonl log where one with results exists (the old one is "
            "kept beside it as LOG.1).",
        ),
    ]


def _one_point_spec(
    suite_ref: str, variants: tuple[str, ...], baseline: str | None, values: dict[str, Any]
) -> Any:
    """The sweep of one point that `gpubench run` measures: the suite's parameters given,
    the timing options given, the variants and baseline named."""
    from gpubench.load import config

    timing = {k: values.pop(k) for k in TIMING_KEYS if values.get(k) is not None}
    for key in TIMING_KEYS:
        values.pop(key, None)
    mapping: dict[str, Any] = {
        "suite": suite_ref,
        "params": {k: v for k, v in values.items() if v is not None},
        "timing": timing,
    }
    if variants:
        mapping["variants"] = list(variants)
    if baseline:
        mapping["baseline"] = baseline
    return config.spec_from_mapping(mapping, source="command line")


def _run_help(bench: Benchmark) -> str:
    example = " ".join(
        f"--{p.name.replace('_', '-')} {p.default}"
        for p in bench.params
        if p.default is not None and p.compile_time
    )
    return (
        f"{bench.description}.\n\nVariants: {', '.join(bench.variant_names)} "
        f"(baseline: {bench.baseline}).\n\n\b\nExample:\n  gpubench run {bench.name} {example}"
    )


def run_command(bench: Benchmark, suite_ref: str) -> click.Command:
    def command(
        variants: tuple[str, ...],
        baseline: str | None,
        json_path: str | None,
        csv_path: str | None,
        jsonl_path: str | None,
        markdown_path: str | None,
        device: int,
        profile: bool,
        devices: str | None,
        verbose: bool,
        history_path: str | None,
        label: str,
        timeline_path: str | None,
        force: bool,
        **values: Any,
    ) -> None:
        from gpubench.store.outputs import OutputRequest

        spec = _one_point_spec(suite_ref, variants, baseline, values)
        request = OutputRequest(
            json=json_path,
            csv=csv_path,
            jsonl=jsonl_path,
            timeline=timeline_path,
            force=force,
            markdown=markdown_path,
            profile=profile,
            verbose=verbose,
            history=history_path,
            label=label,
        )
        code = execute(spec, request, device, spread_from(device, devices))
        click.get_current_context().exit(code)

    command.__doc__ = _run_help(bench)
    for option in reversed([timing_options, output_options, *_run_options(bench)]):
        command = option(command)
    cmd = click.command(name=bench.name, epilog=EXIT_CODES_HELP)(command)
    cmd.params.extend(param_option(p) for p in bench.params)
    return cmd


class SuiteGroup(click.Group):
    """`gpubench run SUITE`: one subcommand per suite, built from its declared parameters."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from gpubench.load import registry

        return registry.suite_names()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from gpubench.load import registry

        if name.endswith((".py", ".yaml", ".yml")):  # a user's own suite or kernel file
            return run_command(registry.get(name), name)
        suites = registry.all_suites()
        return run_command(suites[name], name) if name in suites else None

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        from gpubench.load import registry

        name = args[0] if args else ""
        if (
            name
            and not name.startswith("-")
            and not name.endswith((".py", ".yaml", ".yml"))
            and name not in registry.suite_names()
        ):
            from gpubench.errors import did_you_mean

            hint = did_you_mean(name, registry.suite_names())
            raise click.UsageError(
                f"unknown suite {name!r}{hint}; suites: {', '.join(registry.suite_names())}", ctx
            )
        return super().resolve_command(ctx, args)


@click.group(cls=SuiteGroup, epilog=EXIT_CODES_HELP)
def run() -> None:
    """Run one point of a suite: every variant (or those named), checked, timed, one table.

    \b
    Examples:
      gpubench run transpose --tile 32
      gpubench run transpose --tile 32 --size 4096 -v naive -v padded --json out.json
    """


def inspect_command(bench: Benchmark, suite_ref: str) -> click.Command:
    @click.option(
        "--variant",
        "-v",
        "kernels",
        multiple=True,
        help="Only this kernel (repeatable; default: every kernel of the source).",
    )
    @click.option(
        "--arch",
        default="sm_90",
        show_default=True,
        help="Architecture to compile for (no GPU needed).",
    )
    @click.option("--ptx", "show_ptx", is_flag=True, help="Print the PTX with source lines.")
    @click.option(
        "--sass", "show_sass", is_flag=True, help="Print the SASS (needs cuobjdump or nvdisasm)."
    )
    def command(
        kernels: tuple[str, ...], arch: str, show_ptx: bool, show_sass: bool, **values: Any
    ) -> None:
        from gpubench import api
        from gpubench.engine import inspection
        from gpubench.errors import EnvironmentProblem
        from gpubench.report.command_tables import inspection_table
        from gpubench.report.plain import say

        found = api.inspect(bench, suite_ref, values, arch, kernels, want_sass=not show_ptx)
        console = out_console()
        if show_sass:
            if not found.report.sass:
                raise EnvironmentProblem(found.report.note or "no SASS could be produced")
            functions = inspection.sass_functions(found.report.sass)
            for kernel in found.shown:
                console.rule(f"{kernel.name} · SASS · {arch}")
                say(console, "\n".join(functions.get(kernel.name, [])))
            return
        if show_ptx:
            chosen = set(kernels) if kernels else None
            say(console, inspection.annotate_ptx(found.report.ptx, found.source, chosen))
            return
        console.print(inspection_table(bench, arch, found))
        if found.report.note:
            say(err_console(), f"note: {found.report.note}")

    command.__doc__ = (
        f"Registers, spills, shared memory and the instruction mix of {bench.name}'s kernels, "
        "compiled here with nvcc (no GPU needed); --ptx or --sass print the listings."
    )
    cmd = click.command(name=bench.name, epilog=EXIT_CODES_HELP)(command)
    cmd.params.extend(param_option(p) for p in bench.params)
    return cmd


class InspectGroup(SuiteGroup):
    """`gpubench inspect SUITE`: one subcommand per suite, as for run."""

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from gpubench.load import registry

        if name.endswith((".py", ".yaml", ".yml")):
            return inspect_command(registry.get(name), name)
        suites = registry.all_suites()
        return inspect_command(suites[name], name) if name in suites else None


@click.group(cls=InspectGroup, epilog=EXIT_CODES_HELP)
def inspect() -> None:
    """What a suite's kernels compile to, without a GPU: registers, spills, shared memory,
    barriers, and the instruction mix (global and shared loads and stores by width, FFMA,
    MUFU, branches, predicated instructions, barriers) from the SASS, or from the PTX where
    neither cuobjdump nor nvdisasm is installed.

    \b
    Examples:
      gpubench inspect transpose --tile 32
      gpubench inspect matmul -v pipelined --arch sm_80
      gpubench inspect reduction -v warp_shuffle --ptx
      gpubench inspect configs/examples/saxpy.yaml --sass
    """
