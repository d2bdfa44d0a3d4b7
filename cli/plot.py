"""``report --plot``: tokens over requests against the threshold and window (matplotlib, optional),
the session as it ran beside the run with ctxfold compacting when it fires (the simulation).

Install with ``pip install "ctxfold[plot]"``. SVG and PNG come straight from matplotlib; HTML
is a small page around the inline SVG, so it needs no JavaScript and no network.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from ctxfold.atomic import write_atomic
from ctxfold.errors import UsageError

if TYPE_CHECKING:
    from ctxfold.engine.replay import Report

FORMATS = (".svg", ".png", ".html")


def draw(report: Report, out: str) -> None:
    suffix = Path(out).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(
            f"--plot writes {', '.join(FORMATS)} files, not {suffix or 'a file without extension'}"
        )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise UsageError('--plot needs matplotlib: pip install "ctxfold[plot]"') from None

    rows = report.rows
    x = [r.index for r in rows]
    fig, ax = plt.subplots(figsize=(11.5, 4.5), dpi=110)
    ax.plot(x, [r.estimate for r in rows], label="estimate (tokenizer)", color="#999999", linewidth=1)
    ax.plot(
        x,
        [r.calibrated for r in rows],
        label=f"calibrated ({report.calibration})",
        color="#1f77b4",
        linewidth=1.6,
    )
    real = [(r.index, r.real) for r in rows if r.real is not None]
    if real:
        ax.scatter(
            [i for i, _ in real],
            [v for _, v in real],
            s=6,
            color="#2ca02c",
            label="real (provider)",
            zorder=3,
        )
    ax.axhline(report.policy.threshold, color="#ff7f0e", linestyle="--", linewidth=1, label="threshold")
    ax.axhline(report.policy.window, color="#d62728", linewidth=1, label="window")
    fire = report.first_fire
    if fire is not None:
        ax.axvline(
            fire.index, color="#ff7f0e", alpha=0.5, linewidth=4, label=f"ctxfold fires (#{fire.index})"
        )
    for i, r in enumerate(r for r in rows if r.recorded_compaction):
        ax.axvline(
            r.index,
            color="#9467bd",
            linestyle=":",
            linewidth=1.5,
            label="recorded compaction" if i == 0 else None,
        )
    sim = report.simulation
    if sim is not None and sim.series:
        # the run as it would have gone had ctxfold compacted when it fired, beside the real one
        ax.plot(
            [i for i, _, _ in sim.series],
            [p for _, p, _ in sim.series],
            label="with ctxfold compacting (predicted)",
            color="#8c564b",
            linewidth=1.4,
            linestyle="-.",
            zorder=1.8,  # under the calibrated line, which it follows until the first firing
        )
        shifted = [(i, r) for i, _, r in sim.series if r is not None]
        if shifted:
            ax.scatter(
                [i for i, _ in shifted],
                [r for _, r in shifted],
                s=6,
                color="#8c564b",
                marker="x",
                label="with ctxfold compacting (real, less what it removed)",
                zorder=3,
            )
        for i, idx in enumerate(sim.compactions):
            ax.axvline(idx, color="#8c564b", alpha=0.35, label="simulated compaction" if i == 0 else None)
    ax.set_xlabel("model request")
    ax.set_ylabel("prompt tokens")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k" if v else "0"))
    ax.set_title(Path(report.estimate.path).name)
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False
    )  # beside, never over the data
    ax.grid(alpha=0.25)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png" if suffix == ".png" else "svg")
    plt.close(fig)
    data = buf.getvalue()
    if suffix == ".html":
        title = Path(report.estimate.path).name
        data = (
            f"<!doctype html><meta charset='utf-8'><title>ctxfold report: {title}</title>"
            f"<body style='font-family:sans-serif'><h1>{title}</h1>".encode()
            + data[data.find(b"<svg") :]
            + b"</body>"
        )
    write_atomic(out, data)
