"""Read TSPLIB95 symmetric instances into integer distance matrices (benchmarks only).

Distances follow TSPLIB95's DOC exactly (EUC_2D nint, ATT pseudo-Euclidean,
GEO with PI = 3.141592 and RRR = 6378.388, EXPLICIT LOWER_DIAG_ROW /
UPPER_DIAG_ROW / UPPER_ROW / FULL_MATRIX), otherwise published optima do not
match.  Reference: G. Reinelt, "TSPLIB - A Traveling Salesman Problem
Library", ORSA J. Computing 3(4), 1991.
"""

from __future__ import annotations

import csv
import os

import numpy as np


def _header_and_sections(path):
    head, sections, cur = {}, {}, None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line == "EOF":
                continue
            if line.endswith("_SECTION") or line.split(":")[0].strip().endswith("_SECTION"):
                cur = line.split(":")[0].strip()
                sections[cur] = []
                continue
            if cur is None and ":" in line:
                k, v = line.split(":", 1)
                head[k.strip()] = v.strip()
                continue
            if cur is not None:
                sections[cur].extend(line.split())
    return head, sections


def read_tsp(path: str) -> np.ndarray:
    """The ``(N, N)`` integer distance matrix (as float64) of a TSPLIB ``.tsp`` file."""
    head, sec = _header_and_sections(path)
    n = int(head["DIMENSION"])
    kind = head["EDGE_WEIGHT_TYPE"]
    if kind == "EXPLICIT":
        fmt = head["EDGE_WEIGHT_FORMAT"]
        vals = [float(x) for x in sec["EDGE_WEIGHT_SECTION"]]
        d = np.zeros((n, n))
        it = iter(vals)
        if fmt == "FULL_MATRIX":
            d = np.array(vals[: n * n]).reshape(n, n)
        else:
            for i in range(n):
                if fmt == "LOWER_DIAG_ROW":
                    js = range(0, i + 1)
                elif fmt == "UPPER_DIAG_ROW":
                    js = range(i, n)
                elif fmt == "UPPER_ROW":
                    js = range(i + 1, n)
                elif fmt == "LOWER_ROW":
                    js = range(0, i)
                else:
                    raise ValueError(f"unsupported EDGE_WEIGHT_FORMAT {fmt}")
                for j in js:
                    v = next(it)
                    d[i, j] = d[j, i] = v
        np.fill_diagonal(d, 0)
        return d
    xs = np.array([float(x) for x in sec["NODE_COORD_SECTION"]]).reshape(-1, 3)[:, 1:]
    x, y = xs[:, 0], xs[:, 1]
    dx = x[:, None] - x[None, :]
    dy = y[:, None] - y[None, :]
    if kind == "EUC_2D":
        return np.floor(np.sqrt(dx * dx + dy * dy) + 0.5)
    if kind == "CEIL_2D":
        return np.ceil(np.sqrt(dx * dx + dy * dy))
    if kind == "ATT":
        r = np.sqrt((dx * dx + dy * dy) / 10.0)
        t = np.floor(r + 0.5)
        return np.where(t < r, t + 1, t)
    if kind == "GEO":
        pi = 3.141592

        def rad(v):
            deg = np.trunc(v)
            mn = v - deg
            return pi * (deg + 5.0 * mn / 3.0) / 180.0

        lat, lon = rad(x), rad(y)
        rrr = 6378.388
        q1 = np.cos(lon[:, None] - lon[None, :])
        q2 = np.cos(lat[:, None] - lat[None, :])
        q3 = np.cos(lat[:, None] + lat[None, :])
        arg = np.clip(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3), -1.0, 1.0)
        d = np.trunc(rrr * np.arccos(arg) + 1.0)
        np.fill_diagonal(d, 0)
        return d
    raise ValueError(f"unsupported EDGE_WEIGHT_TYPE {kind}")


def read_tour(path: str) -> np.ndarray:
    _, sec = _header_and_sections(path)
    ids = [int(x) for x in sec["TOUR_SECTION"]]
    ids = ids[: ids.index(-1)] if -1 in ids else ids
    return np.array(ids) - 1


def optima(folder: str) -> list[dict]:
    with open(os.path.join(folder, "optima.csv")) as f:
        return list(csv.DictReader(f))


def check_optimal_tours(folder: str) -> list[tuple[str, float, float]]:
    """Cost every shipped optimal tour; returns (name, tour cost, listed optimum)."""
    out = []
    for row in optima(folder):
        if not row["opt_tour_file"]:
            continue
        d = read_tsp(os.path.join(folder, row["name"] + ".tsp"))
        t = read_tour(os.path.join(folder, row["opt_tour_file"]))
        out.append((row["name"], float(d[t, np.roll(t, 1)].sum()), float(row["optimal_length"])))
    return out


def find_folder() -> str | None:
    """``$PLINK_TSPLIB``, else ``shared/data/tsplib`` beside the checkout or any parent of it."""
    env = os.environ.get("PLINK_TSPLIB")
    if env:
        return env if os.path.isdir(env) else None
    d = os.path.abspath(os.path.dirname(__file__))
    while True:
        cand = os.path.join(d, "shared", "data", "tsplib")
        if os.path.isfile(os.path.join(cand, "optima.csv")):
            return cand
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


if __name__ == "__main__":  # pragma: no cover
    folder = find_folder()
    for name, c, o in check_optimal_tours(folder):
        print(f"{name:10s} {c:10.0f} {o:10.0f} {'OK' if c == o else 'MISMATCH'}")
