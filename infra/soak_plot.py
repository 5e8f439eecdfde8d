"""Draws the soak's figures (infra/soak.sh) as one SVG: resident memory, open descriptors,
threads and live tasks every 10 s, and time to first event per 5 minutes. Standard library
only.

    python3 infra/soak_plot.py soak.json soak.svg
"""

import json
import sys

WIDTH, PANEL, MARGIN = 720, 150, 60


def panel(top, title, series, x_max, unit):
    """One chart: each series is (label, colour, [(x, y)])."""
    ys = [y for _, _, points in series for _, y in points] or [0]
    y_max = max(ys) * 1.1 or 1
    inner = WIDTH - 2 * MARGIN
    out = [
        f'<text x="{MARGIN}" y="{top - 8}" font-size="13">{title}</text>',
        f'<rect x="{MARGIN}" y="{top}" width="{inner}" height="{PANEL}" fill="none" stroke="#999"/>',
        f'<text x="{MARGIN - 6}" y="{top + 10}" font-size="10" text-anchor="end">{y_max:.0f} {unit}</text>',
        f'<text x="{MARGIN - 6}" y="{top + PANEL}" font-size="10" text-anchor="end">0</text>',
    ]
    for i, (label, colour, points) in enumerate(series):
        path = " ".join(
            f"{MARGIN + x / x_max * inner:.1f},{top + PANEL - y / y_max * PANEL:.1f}"
            for x, y in points
        )
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out.append(
            f'<text x="{WIDTH - MARGIN - 4}" y="{top + 14 + 13 * i}" font-size="11" '
            f'text-anchor="end" fill="{colour}">{label}</text>'
        )
    return out


def main(source, target):
    with open(source) as f:
        soak = json.load(f)
    samples = soak["samples"]
    minutes = [s["at_s"] / 60 for s in samples]
    x_max = max(minutes + [soak["minutes"]])
    windows = soak["windows"]
    mid = [w["from_min"] + 2.5 for w in windows]

    def points(key, xs=minutes, rows=samples):
        return [(x, r[key] or 0) for x, r in zip(xs, rows)]

    parts = []
    top = 40
    for title, series, unit in [
        ("resident memory of baton serve", [("RSS", "#1f77b4", points("rss_mib"))], "MiB"),
        ("open descriptors and threads", [("descriptors", "#d62728", points("fds")),
                                          ("threads", "#2ca02c", points("threads"))], ""),
        ("live tokio tasks", [("tasks", "#9467bd", points("tasks"))], ""),
        ("time to first event, per 5 minutes", [
            ("p99", "#ff7f0e", points("first_event_p99_ms", mid, windows)),
            ("p50", "#8c564b", points("first_event_p50_ms", mid, windows))], "ms"),
    ]:
        parts += panel(top, title, series, x_max, unit)
        top += PANEL + 45
    parts.append(
        f'<text x="{WIDTH / 2}" y="{top - 20}" font-size="11" text-anchor="middle">'
        f'minutes ({soak["turns"]} turns at {soak["rate_per_s"]}/s)</text>'
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{top}" '
        f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
        + "".join(parts)
        + "</svg>\n"
    )
    with open(target, "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
