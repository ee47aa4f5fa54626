"""Re-create the real-data slices of this folder from /work/shared/data (or DATA=...).

Only the MIT / Apache-2.0 sets are sliced (PlanetLab, Seattle, Skyplane); EC2 p4d and ARCHER
have no licence and are never copied.  Seeded: the same hosts every time.

    python tests/data/make_slices.py
"""
import csv
import os
from pathlib import Path

import numpy as np

SRC = Path(os.environ.get("DATA", "/work/shared/data"))
OUT = Path(__file__).resolve().parent


def read(path):
    return [row for row in csv.reader(open(path))]


def write(path, rows):
    with open(path, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


def pick(n_total, k, seed, must=()):
    rng = np.random.default_rng(seed)
    rest = [i for i in rng.permutation(n_total) if i not in must]
    return sorted(list(must) + rest[: k - len(must)])


def sub(rows, idx):
    return [[rows[i][j] for j in idx] for i in idx]


# PlanetLab 490 (MIT): 24 hosts of slice 1, milliseconds
pl = read(SRC / "planetlab490_rtt/rtt_ms_frame01.csv")
write(OUT / "planetlab24_rtt_ms.csv", sub(pl, pick(len(pl), 24, 1)))

# Seattle 99 (MIT): 24 hosts of slice 1, seconds, verbatim: keeps 3 hosts with a non-zero
# self-RTT and off-diagonal zeros (the raw file's quirks)
se = read(SRC / "seattle99_rtt/rtt_s_frame001.csv")
m = np.array([[float(c) if c else np.nan for c in r] for r in se])
selfrtt = [i for i in range(len(m)) if m[i, i] != 0][:3]
zero_i, zero_j = [(i, j) for i in range(len(m)) for j in range(len(m)) if i != j and m[i, j] == 0][0]
write(OUT / "seattle24_rtt_s.csv", sub(se, pick(len(se), 24, 2, must=tuple(sorted(set(selfrtt + [zero_i, zero_j]))))))

# Skyplane (Apache-2.0): 20 regions of the RTT matrix (ms) with their hosts.csv rows, and
# 16 regions of the throughput matrix (Gbit/s) with their throughput_hosts.csv rows
lat = read(SRC / "cloud_interregion_skyplane/latency_rtt_ms.csv")
hosts = read(SRC / "cloud_interregion_skyplane/hosts.csv")
idx = pick(len(lat), 20, 3)
write(OUT / "skyplane20_rtt_ms.csv", sub(lat, idx))
write(OUT / "skyplane20_hosts.csv", [hosts[0]] + [[str(k)] + hosts[i + 1][1:] for k, i in enumerate(idx)])
tp = read(SRC / "cloud_interregion_skyplane/throughput_gbps.csv")
tph = read(SRC / "cloud_interregion_skyplane/throughput_hosts.csv")
idx = pick(len(tp), 16, 4)
write(OUT / "skyplane16_throughput_gbps.csv", sub(tp, idx))
write(OUT / "skyplane16_throughput_hosts.csv", [tph[0]] + [[str(k)] + tph[i + 1][1:] for k, i in enumerate(idx)])
# Skyplane (Apache-2.0): 23 named regions of the RTT matrix (ms): South Africa (2), the Nordics (4),
# Japan (5), India (4) and the Gulf (2), the US west coast (6); the pairs 19 and 10 ms apart and
# 160-200 and 22-60 ms from the groups plink had folded them into (tests/test_hierarchy.py)
names = ("af-south-1 southafricanorth eu-north-1 norwayeast swedencentral europe-north1-a ap-northeast-1 "
         "ap-northeast-3 japaneast asia-northeast1-a asia-northeast2-a ap-south-1 centralindia asia-south1-a "
         "asia-south2-a me-south-1 uaenorth us-west-1 us-west-2 westus westus3 us-west1-a us-west4-a").split()
idx = [i for i, r in enumerate(hosts[1:]) if r[1].split(":", 1)[1] in names]
assert len(idx) == len(names)
write(OUT / "skyplane23_regions_rtt_ms.csv", sub(lat, idx))
write(OUT / "skyplane23_regions_hosts.csv", [hosts[0]] + [[str(k)] + hosts[i + 1][1:] for k, i in enumerate(idx)])
print("wrote", ", ".join(p.name for p in sorted(OUT.glob("*.csv"))))
