"""Results on the roofline: attainable = min(compute roof, DRAM bandwidth × intensity).

Every measured result that did arithmetic (Work.flops > 0) is placed at its algorithmic
intensity (flops / bytes that must move); results without arithmetic (a transpose, a copy)
have no place on the intensity axis and are set against the DRAM roof by bandwidth instead.
Matplotlib is imported only to draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpubench.model import metrics
from gpubench.store.ceilings import CeilingsRecord

# The compute roof kernels are judged against: the suites' arithmetic is FP32.
COMPUTE_ROOF = "fp32_gflops"
BANDWIDTH_ROOF = "dram_read_gbps"
# The metric a profiled run carries: DRAM bytes Nsight Compute counted for one run.
PROFILED_DRAM_BYTES = "dram_bytes"


@dataclass(frozen=True)
class Placement:
    suite: str
    variant: str
    point: dict[str, Any]
    gpu: str
    gbps: float
    gflops: float | None  # None: no arithmetic
    intensity: float | None  # flops per byte
    attainable: float  # GFLOP/s for arithmetic, GB/s for the others
    fraction: float  # achieved / attainable
    bound: str  # "memory" or "compute"
    # flops / DRAM bytes a profiler measured (metric "dram_bytes"), where the run was profiled.
    measured_intensity: float | None = None


def _work(result: Any) -> tuple[int, int]:
    work = result.work or {}
    return int(work.get("bytes_moved") or 0), int(work.get("flops") or 0)


def place(results: list[Any], ceilings: CeilingsRecord) -> list[Placement]:
    """Every measured result with its work, against one GPU's ceilings."""
    fp32 = ceilings.get(COMPUTE_ROOF)
    dram = ceilings.get(BANDWIDTH_ROOF)
    out = []
    for r in results:
        nbytes, flops = _work(r)
        if not r.status.is_measured or not r.median_ms or nbytes <= 0 or not dram:
            continue
        # The rates as metrics.py defines them (the results table shows the same numbers).
        gbps = metrics.bandwidth_gbps(nbytes, r.median_ms)
        if flops > 0 and fp32:
            intensity = flops / nbytes
            gflops = metrics.gflops(flops, r.median_ms)
            attainable = min(fp32, dram * intensity)
            bound = "memory" if dram * intensity < fp32 else "compute"
            dram_bytes = r.metrics.get(PROFILED_DRAM_BYTES)
            measured = flops / dram_bytes if dram_bytes else None
            out.append(
                Placement(
                    r.suite,
                    r.variant,
                    dict(r.point),
                    ceilings.gpu_name,
                    gbps,
                    gflops,
                    intensity,
                    attainable,
                    gflops / attainable,
                    bound,
                    measured,
                )
            )
        else:
            out.append(
                Placement(
                    r.suite,
                    r.variant,
                    dict(r.point),
                    ceilings.gpu_name,
                    gbps,
                    None,
                    None,
                    dram,
                    gbps / dram,
                    "memory",
                )
            )
    return out


def ridge_point(
    ceilings: CeilingsRecord, roof: str = COMPUTE_ROOF, bandwidth: str = BANDWIDTH_ROOF
) -> float | None:
    """The intensity where the bandwidth roof meets the compute roof."""
    compute, dram = ceilings.get(roof), ceilings.get(bandwidth)
    return compute / dram if compute and dram else None


def draw(placements: list[Placement], ceilings: CeilingsRecord, path: str, title: str) -> None:
    """The roofline chart (and, beside it, the kernels without arithmetic against the DRAM
    roof), written to `path` (PNG or SVG by its suffix)."""
    from gpubench.store.outputs import check_picture

    check_picture(path, "--output")  # before the drawing, not as savefig's ValueError after it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arithmetic = [p for p in placements if p.intensity is not None]
    memory_only = [p for p in placements if p.intensity is None]
    panels = 2 if memory_only else 1
    fig, axes = plt.subplots(
        1,
        panels,
        figsize=(15 if panels == 2 else 10, 6.5),
        gridspec_kw={"width_ratios": [3, 2]} if panels == 2 else None,
        squeeze=False,
    )
    colors = {s: f"C{i % 10}" for i, s in enumerate(sorted({p.suite for p in placements}))}
    _draw_roofs(axes[0][0], arithmetic, ceilings, title, colors)
    if memory_only:
        _draw_bandwidths(axes[0][1], memory_only, ceilings, colors)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _roof_kind(ceilings: CeilingsRecord) -> str:
    return "measured" if ceilings.source == "measured" and ceilings.measured else "theoretical"


def _draw_roofs(
    ax: Any,
    arithmetic: list[Placement],
    ceilings: CeilingsRecord,
    title: str,
    colors: dict[str, str],
) -> None:
    """The roofs, the ridge and every kernel with arithmetic at its intensity."""
    lows = [p.intensity for p in arithmetic] + [ridge_point(ceilings) or 1]
    lows += [p.measured_intensity for p in arithmetic if p.measured_intensity]
    x_low = 2 ** math.floor(math.log2(max(min(lows) / 4, 1 / 64)))
    x_high = 2 ** math.ceil(math.log2(max(max(lows) * 4, 64)))
    xs = [x_low * (x_high / x_low) ** (i / 200) for i in range(201)]

    def roof(
        compute: str, bandwidth: str, source: dict[str, Any], style: str, color: str, label: str
    ) -> None:
        peak, bw = source.get(compute), source.get(bandwidth)
        if peak and bw:
            ax.plot(xs, [min(peak, bw * x) for x in xs], style, color=color, lw=2, label=label)

    measured, theory = ceilings.measured, ceilings.theoretical
    roof(
        COMPUTE_ROOF,
        BANDWIDTH_ROOF,
        measured or theory,
        "-",
        "black",
        f"FP32 / DRAM roof ({_roof_kind(ceilings)})",
    )
    if measured:
        roof(COMPUTE_ROOF, "dram_read_gbps", theory, "--", "gray", "FP32 / DRAM roof (theoretical)")
        roof(COMPUTE_ROOF, "l2_read_gbps", measured, ":", "tab:purple", "FP32 / L2 roof (measured)")
        if measured.get("fp64_gflops"):
            ax.axhline(
                measured["fp64_gflops"],
                color="tab:brown",
                lw=1,
                ls="-.",
                label="FP64 roof (measured)",
            )
    _draw_ridge(ax, ceilings)
    shown = _draw_kernels(ax, arithmetic, colors)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM traffic the algorithm needs)")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", ncol=1 if shown < 12 else 2, framealpha=0.9)


def _draw_ridge(ax: Any, ceilings: CeilingsRecord) -> None:
    """Where the DRAM roof meets the compute roof, marked and named."""
    ridge = ridge_point(ceilings)
    if ridge:
        ax.axvline(ridge, color="gray", lw=0.8, ls=":")
        ax.annotate(
            f"ridge {ridge:.1f} FLOP/B",
            (ridge, ceilings.get(COMPUTE_ROOF) or 1),
            textcoords="offset points",
            xytext=(6, -14),
            fontsize=9,
            color="gray",
        )


def _draw_kernels(ax: Any, arithmetic: list[Placement], colors: dict[str, str]) -> int:
    """A marker per suite and variant (hollow where ncu measured the DRAM traffic);
    returns how many variants the legend names."""
    markers = "osD^v<>pPX*h"
    shown: set[tuple[str, str]] = set()
    measured_shown = False
    variant_index: dict[tuple[str, str], int] = {}
    for p in arithmetic:
        key = (p.suite, p.variant)
        index = variant_index.setdefault(key, len([k for k in variant_index if k[0] == p.suite]))
        marker = markers[index % len(markers)]
        ax.scatter(
            p.intensity,
            p.gflops,
            color=colors[p.suite],
            marker=marker,
            s=36,
            edgecolors="black",
            linewidths=0.4,
            zorder=3,
            label=None if key in shown else f"{p.suite}: {p.variant}",
        )
        shown.add(key)
        if p.measured_intensity:
            # Where the kernel really sits: the DRAM traffic it caused, not the minimum.
            ax.scatter(
                p.measured_intensity,
                p.gflops,
                facecolors="none",
                edgecolors=colors[p.suite],
                marker=marker,
                s=36,
                zorder=3,
                label=None if measured_shown else "hollow: at the measured DRAM intensity",
            )
            ax.plot(
                [p.intensity, p.measured_intensity],
                [p.gflops, p.gflops],
                lw=0.6,
                color=colors[p.suite],
                alpha=0.6,
            )
            measured_shown = True
    return len(shown)


def _draw_bandwidths(
    bx: Any, memory_only: list[Placement], ceilings: CeilingsRecord, colors: dict[str, str]
) -> None:
    """The kernels without arithmetic: each variant's best bandwidth against the DRAM roof."""
    best: dict[tuple[str, str], float] = {}
    for p in memory_only:
        key = (p.suite, p.variant)
        best[key] = max(best.get(key, 0.0), p.gbps)
    names = sorted(best, key=lambda k: (k[0], best[k]))
    bx.barh(
        [f"{s}: {v}" for s, v in names],
        [best[k] for k in names],
        color=[colors[s] for s, _ in names],
    )
    dram, theory = ceilings.get(BANDWIDTH_ROOF), ceilings.theoretical
    if dram:
        bx.axvline(
            dram,
            color="black",
            lw=2,
            label=f"DRAM read roof ({_roof_kind(ceilings)}): {dram:,.0f} GB/s",
        )
    if ceilings.measured and theory.get(BANDWIDTH_ROOF):
        bx.axvline(
            theory[BANDWIDTH_ROOF],
            color="gray",
            ls="--",
            lw=1.5,
            label=f"theoretical: {theory[BANDWIDTH_ROOF]:,.0f} GB/s",
        )
    bx.set_xlabel("best bandwidth (GB/s)")
    bx.set_title("no arithmetic: best bandwidth of each variant", fontsize=11)
    bx.tick_params(axis="y", labelsize=8)
    bx.legend(fontsize=8, loc="lower right")
    bx.grid(True, axis="x", alpha=0.3)
