"""Line charts of any metric of a sweep against any parameter, one line per variant.

Choosing what to draw needs no matplotlib (and is tested without it); drawing imports it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpubench.errors import ConfigError, did_you_mean
from gpubench.model.metrics import TIME, Metric, catalog

# One picture stays readable (and quick to draw: 400 panels took a minute and 1.6 GB).
MAX_PANELS = 36
MAX_LINES = 40

# Preferred y metrics when none is named: what the suites are about, in order.
DEFAULT_Y = ("gbps", "gflops", "gelem_per_s", "time_ms")
# Axes whose values span at least this ratio are drawn logarithmic.
LOG_RATIO = 10


@dataclass
class Chart:
    x: str
    y: Metric
    by: str
    facet: str | None
    # facet value → line label → [(x, y)], sorted by x
    lines: dict[Any, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)
    log_x: bool = False
    log_y: bool = False
    # Parameters each line takes its best value over.
    best_over: list[str] = field(default_factory=list)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value(result: Any, key: str) -> float | None:
    if key == TIME.key:
        return result.median_ms
    value = result.metrics.get(key)
    return float(value) if _numeric(value) else None


def _panel(value: Any) -> Any:
    """A facet's value as a panel's key: a list or mapping (a shape, a launch grid) is no
    dict key, so it stands as its text, which the panel's title shows anyway."""
    try:
        hash(value)
    except TypeError:
        return str(value)
    return value


def _follows(results: list[Any], x: str, param: str) -> bool:
    """True if `param` has one value per value of `x` (it is derived from x, or fixed)."""
    seen: dict[str, str] = {}
    for r in results:
        key, value = repr(r.point.get(x)), repr(r.point.get(param))
        if seen.setdefault(key, value) != value:
            return False
    return True


def _choose_x(
    measured: list[Any],
    params: list[str],
    varying: list[str],
    x: str | None,
    split: tuple[str | None, ...] = (),
) -> str:
    """The x axis: the one asked for, or the numeric parameter with the most values, among
    those that do not already split the lines or panels (`split`: --by and --facet)."""
    if x is None:
        numeric = [p for p in varying if all(_numeric(r.point.get(p)) for r in measured)]
        numeric = [p for p in numeric if p not in split] or numeric
        if not numeric:
            raise ConfigError(
                "no numeric parameter varies in these results: nothing to put on the x axis",
                key="--x",
            )
        return max(numeric, key=lambda p: len({r.point.get(p) for r in measured}))
    if x not in params:
        raise ConfigError(
            f"no parameter {x!r} in these results{did_you_mean(x, params)}; "
            f"parameters: {', '.join(params)}",
            key="--x",
        )
    return x


def _choose_y(measured: list[Any], y: str | None) -> Metric:
    """The metric on the y axis: the one asked for, or the first of DEFAULT_Y present."""
    present = {k for r in measured for k in r.metrics} | {TIME.key}
    extra = tuple(Metric(k, k, "") for k in sorted(present))
    if y is None:
        y = next(k for k in DEFAULT_Y if k in present)
    known = {m.key: m for m in catalog(extra)}
    if y not in present or y not in known:
        raise ConfigError(
            f"no metric {y!r} in these results{did_you_mean(y, sorted(present))}; "
            f"metrics: {', '.join(sorted(present))}",
            key="--y",
        )
    return known[y]


def build(
    results: list[Any],
    x: str | None = None,
    y: str | None = None,
    by: str = "variant",
    facet: str | None = None,
) -> Chart:
    """What to draw: lines of `y` against `x`, one per value of `by` (and of every other
    parameter that varies, so no line mixes points), a panel per value of `facet`."""
    measured = [r for r in results if r.status.is_measured]
    if not measured:
        raise ConfigError("no measured results to plot (every result failed or was skipped)")
    params: list[str] = []
    for r in measured:
        params.extend(k for k in r.point if k not in params)
    varying = [p for p in params if len({repr(r.point.get(p)) for r in measured}) > 1]
    x = _choose_x(measured, params, varying, x, (by, facet))
    metric = _choose_y(measured, y)
    _check_split_names(by, facet, params)
    chart = Chart(x=x, y=metric, by=by, facet=facet)
    # Parameters that follow x (rows and cols when x is size) split nothing; any other that
    # varies is folded: each line shows the best value over it (the tuned envelope), and
    # the chart says so. --by or --facet split by one of them instead.
    tied = {p for p in varying if p != x and _follows(measured, x, p)}
    chart.best_over = [p for p in varying if p not in (x, by, facet) and p not in tied]
    chart.lines = _lines(measured, chart)
    xs = [p[0] for panel in chart.lines.values() for line in panel.values() for p in line]
    ys = [p[1] for panel in chart.lines.values() for line in panel.values() for p in line]
    if not xs:
        raise ConfigError(f"no result has both {x} and {metric.key}", key="--y")
    _check_fits(chart)
    chart.log_x = min(xs) > 0 and max(xs) / min(xs) >= LOG_RATIO
    chart.log_y = min(ys) > 0 and max(ys) / min(ys) >= LOG_RATIO
    return chart


def _check_split_names(by: str, facet: str | None, params: list[str]) -> None:
    """--by and --facet name the variant or a parameter of these results."""
    for name, option in ((by, "--by"), (facet, "--facet")):
        if name is not None and not name.strip():  # not taken as "not given"
            raise ConfigError(
                f"an empty name ({name!r}): give variant or a parameter; "
                f"parameters: {', '.join(params)}",
                key=option,
            )
        if name and name != "variant" and name not in params:
            raise ConfigError(
                f"no parameter {name!r} in these results; parameters: variant, {', '.join(params)}",
                key=option,
            )


def _lines(measured: list[Any], chart: Chart) -> dict[Any, dict[str, list[tuple[float, float]]]]:
    """{panel: {line label: [(x, y), ...] sorted}}, the best y where several results share
    a place (the parameters folded over)."""
    x, by, facet, metric = chart.x, chart.by, chart.facet, chart.y
    better = max if metric.higher_is_better is not False else min
    cells: dict[tuple[Any, str, float], float] = {}
    for r in measured:
        xv, yv = r.point.get(x), _value(r, metric.key)
        if not _numeric(xv) or yv is None:
            continue
        label = r.variant if by == "variant" else f"{by}={r.point.get(by)}"
        panel = (r.variant if facet == "variant" else _panel(r.point.get(facet))) if facet else None
        key = (panel, label, float(xv))
        cells[key] = better(cells[key], yv) if key in cells else yv
    lines: dict[Any, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for (panel, label, xv), yv in cells.items():
        lines[panel][label].append((xv, yv))
    return {k: {label: sorted(v) for label, v in lines[k].items()} for k in lines}


def _check_fits(chart: Chart) -> None:
    """No more panels than one picture shows, no more lines than one legend tells apart."""
    if len(chart.lines) > MAX_PANELS:
        raise ConfigError(
            f"{chart.facet} makes {len(chart.lines)} panels, more than "
            f"{MAX_PANELS} one picture can show: facet by a parameter with fewer "
            "values",
            key="--facet",
        )
    lines_per_panel = max(len(panel) for panel in chart.lines.values())
    if lines_per_panel > MAX_LINES:
        raise ConfigError(
            f"{chart.by} makes {lines_per_panel} lines in one panel, more than "
            f"{MAX_LINES} one legend can tell apart: split by a parameter with "
            "fewer values, or --facet by this one",
            key="--by",
        )


def draw(chart: Chart, path: str, title: str) -> None:
    from gpubench.store.outputs import check_picture

    check_picture(path, "--output")  # before the drawing, not as savefig's ValueError after it
    panels = list(chart.lines)
    fig, axes = _grid(len(panels))
    columns = len(axes[0])
    unit = f" ({chart.y.unit})" if chart.y.unit and chart.y.unit not in chart.y.header else ""
    for i, panel in enumerate(panels):
        ax = axes[i // columns][i % columns]
        for n, (label, points) in enumerate(chart.lines[panel].items()):
            # Ten colours, then the same colours dashed, dotted...: no two lines look alike.
            style = ("-", "--", ":", "-.")[(n // 10) % 4]
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="os^D"[(n // 10) % 4],
                ms=4,
                ls=style,
                color=f"C{n % 10}",
                label=label,
            )
        if chart.log_x:
            ax.set_xscale("log", base=2)
        if chart.log_y:
            ax.set_yscale("log")
        ax.set_xlabel(chart.x)
        ax.set_ylabel(f"{chart.y.header}{unit}")
        if chart.facet:
            ax.set_title(f"{chart.facet} = {panel}", fontsize=10)
        ax.grid(True, alpha=0.3)
        if len(chart.lines[panel]) > 8:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        else:
            ax.legend(fontsize=8)
    _finish(fig, axes, len(panels), title, path)


def _grid(panels: int) -> tuple[Any, Any]:
    """A figure of `panels` panels, three to a row (matplotlib imported here, headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(panels, 3)
    rows = -(-panels // columns)
    return plt.subplots(rows, columns, figsize=(6.5 * columns, 4.8 * rows), squeeze=False)


def _finish(fig: Any, axes: Any, used: int, title: str, path: str) -> None:
    """The panels past `used` blanked, the title set, the figure written and closed."""
    import matplotlib.pyplot as plt

    columns = len(axes[0])
    for j in range(used, len(axes) * columns):
        axes[j // columns][j % columns].axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def draw_search_curves(
    scored: dict[str, list[Any]], path: str, title: str, unit: str = "ms"
) -> None:
    """Tuning strategies side by side: per problem a panel, per strategy the median over
    seeds of best found / optimum against evaluations (gpubench.tune.search.ProblemScore)."""
    labels = [problem.label for problem in next(iter(scored.values()))]
    fig, axes = _grid(len(labels))
    columns = len(axes[0])
    for i, label in enumerate(labels):
        ax = axes[i // columns][i % columns]
        for n, (strategy, problems) in enumerate(scored.items()):
            problem = problems[i]
            shown = [(k + 1, r) for k, r in enumerate(problem.median_ratio) if r != float("inf")]
            ax.plot(
                [k for k, _ in shown],
                [r for _, r in shown],
                ls=("-", "--", ":", "-.")[(n // 10) % 4],
                color=f"C{n % 10}",
                label=f"{strategy} ({problem.within:.0%} within 5%)",
            )
        ax.axhline(1.05, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(f"evaluations (of {problems[i].configurations} configurations)")
        ax.set_ylabel("median best found / optimum")
        ax.set_title(f"{label} · optimum {problems[i].optimum:.4g} {unit}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    _finish(fig, axes, len(labels), title, path)
