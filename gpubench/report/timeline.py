"""Per-stream timelines of one run: a compact text Gantt chart, and a PNG through matplotlib."""

from __future__ import annotations

from typing import Any

from gpubench import install_hint
from gpubench.errors import EnvironmentProblem
from gpubench.model.results import Result
from gpubench.report.plain import say

SYMBOL = {"H2D": "▶", "kernel": "█", "D2H": "◀", "D2D": "=", "library": "▒", "repeat": "↻"}
COLOR = {"H2D": "tab:blue", "kernel": "tab:orange", "D2H": "tab:green", "D2D": "tab:purple",
         "library": "tab:red", "repeat": "tab:brown"}  # fmt: skip
NAMES = {"H2D": "host→device", "kernel": "kernel", "D2H": "device→host", "D2D": "device→device",
         "library": "library call", "repeat": "repeat until converged"}  # fmt: skip


def _lane(span: dict[str, Any]) -> str:
    return "timing stream" if span["stream"] == 0 else f"stream {span['stream']}"


def text_chart(result: Result, width: int = 100) -> str:
    spans = result.timeline
    if not spans:
        return ""
    end = max(s["end_ms"] for s in spans)
    scale = (width - 1) / (end or 1.0)  # a run of no measurable time: every span at column 0
    lanes: dict[str, list[str]] = {}
    for span in spans:
        row = lanes.setdefault(_lane(span), [" "] * width)
        first = int(span["start_ms"] * scale)
        last = max(first, int(span["end_ms"] * scale))
        for column in range(first, last + 1):
            row[column] = SYMBOL.get(span["op"], "#")
    label = max(len(name) for name in lanes)
    legend = "  ".join(
        f"{SYMBOL[op]} {NAMES[op]}" for op in NAMES if any(s["op"] == op for s in spans)
    )
    lines = [f"{result.variant}: {end:.2f} ms  ({legend})"]
    lines += [f"  {name:>{label}} |{''.join(row)}|" for name, row in sorted(lanes.items())]
    return "\n".join(lines)


def draw_png(results: list[Result], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise EnvironmentProblem(
            "drawing a timeline needs matplotlib: " + install_hint("plot")
        ) from None
    drawn = [r for r in results if r.timeline]
    figure, axes = plt.subplots(
        len(drawn),
        1,
        figsize=(12, 1.2 + 0.5 * sum(len({_lane(s) for s in r.timeline}) for r in drawn)),
        squeeze=False,
    )
    for ax, result in zip(axes[:, 0], drawn, strict=True):
        lanes = sorted({_lane(s) for s in result.timeline})
        for span in result.timeline:
            y = lanes.index(_lane(span))
            ax.broken_barh(
                [(span["start_ms"], span["end_ms"] - span["start_ms"])],
                (y - 0.4, 0.8),
                color=COLOR.get(span["op"], "gray"),
                edgecolor="white",
                linewidth=0.6,
            )
        ax.set_yticks(range(len(lanes)), lanes)
        point = ", ".join(f"{k}={v}" for k, v in result.point.items())
        ax.set_title(f"{result.variant} ({point})", fontsize=9, loc="left")
        ax.set_xlabel("ms")
    used = [op for op in NAMES if any(s["op"] == op for r in drawn for s in r.timeline)]
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOR[op]) for op in used]
    figure.legend(handles, [NAMES[op] for op in used], loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def show(results: list[Result], console: Any, path: str | None) -> None:
    for result in results:
        chart = text_chart(result)
        if chart:
            say(console, chart)
    if path:
        draw_png(results, path)
        say(console, f"timeline: {path}")
