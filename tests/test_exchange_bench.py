"""The pure parts of benchmarks/exchange_netns.py: the cases' prices and the report from saved data."""

from benchmarks.exchange_netns import CASES, analyse, main


def _doc(mpi_factor: float, tcp_factor: float, mbit: float = 100.0) -> dict:
    runs = {}
    for name, (pairs, flows, ranks, stride, active) in CASES.items():
        size = 1 << 20
        model = size * 8 * flows / (mbit * 1e6)
        runs[f"{name} {size}"] = {"case": name, "size": size, "model_s": model, "mpi": [model * mpi_factor] * 3,
                                  "mpi_noput": [model * 1.02, model * 1.9, model * 1.02],
                                  "tcp_exchange": [model * tcp_factor] * 3, "tcp_oneway": [model] * 3}
    return {"cluster": {"host_mbit": mbit, "uplink_mbit": mbit}, "repeats": 3, "started": "t0", "finished": "t1",
            "runs": runs}


def test_cases_price_flows_on_the_busiest_link():
    # in-rack pairs are bound by their own NICs (1 flow); cross-rack pairs put 2 flows on each uplink direction
    assert {n: c[1] for n, c in CASES.items()} == {"one pair": 1, "one pair, 4-rank job": 1,
                                                   "two pairs in racks": 1, "two pairs across racks": 2}
    for pairs, _, ranks, stride, active in CASES.values():
        assert all(b == a ^ stride for a, b in pairs) and len(pairs) * 2 == active <= ranks


def test_analyse_prints_ratios_and_slow_runs():
    text = analyse(_doc(2.0, 1.05))
    rows = [ln for ln in text.splitlines() if ln.startswith(("one pair", "two pairs"))]
    assert len(rows) == 4
    assert all("2.00x" in ln and "1.02x" in ln and "1.05x" in ln and ln.rstrip().endswith("3/3, 1/3, 0/3")
               for ln in rows)


def test_analyse_reads_files_without_the_no_put_runs():
    doc = _doc(2.0, 1.05)
    for row in doc["runs"].values():
        del row["mpi_noput"]
    rows = [ln for ln in analyse(doc).splitlines() if ln.startswith("one pair ")]
    assert rows and all(ln.rstrip().endswith("3/3, -, 0/3") for ln in rows)


def test_analyse_only(tmp_path, capsys):
    import json

    f = tmp_path / "x.json"
    f.write_text(json.dumps(_doc(1.0, 1.0)))
    assert main(["--analyse-only", str(f)]) == 0
    assert "0/3, 1/3, 0/3" in capsys.readouterr().out
