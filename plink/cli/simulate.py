"""plink simulate: a datacenter-shaped probe file without a cluster."""

from __future__ import annotations

import click

from plink.cli._app import _echo_json, cli, stdout_if_dash


def parse_hosts_per_rack(text: str) -> int | tuple[int, int]:
    """``"8"`` -> 8, ``"5-9"`` -> (5, 9); anything else is a usage error."""
    parts = str(text).strip().split("-")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        vals = []
    if len(vals) == 1:
        return vals[0]
    if len(vals) == 2:
        return (vals[0], vals[1])
    raise click.BadParameter(f"expected a number or a range LO-HI, got {text!r}", param_hint="--hosts-per-rack")


@cli.command()
@click.option("--racks", default=8, show_default=True, type=int, help="Racks per row.")
@click.option("--hosts-per-rack", default="8", show_default=True,
              help="Hosts in each rack, or a range LO-HI: each rack gets LO..HI hosts at random (unequal racks).")
@click.option("--rows", default=1, show_default=True, type=int, help="Rows per cluster.")
@click.option("--clusters", default=1, show_default=True, type=int, help="Clusters per datacenter.")
@click.option("--dcs", default=1, show_default=True, type=int, help="Datacenters.")
@click.option("--rack-us", default=20.0, show_default=True, help="RTT inside a rack (us).")
@click.option("--row-us", default=60.0, show_default=True, help="RTT between racks of a row (us).")
@click.option("--cluster-us", default=120.0, show_default=True, help="RTT between rows (us).")
@click.option("--dc-us", default=250.0, show_default=True, help="RTT between clusters (us).")
@click.option("--inter-dc-us", default=2000.0, show_default=True, help="RTT between datacenters (us).")
@click.option("--height-us", default=5.0, show_default=True, help="Max per-host startup cost (us).")
@click.option("--jitter", default=0.05, show_default=True, help="Log-normal multiplicative noise sigma.")
@click.option("--outliers", "outlier_frac", default=0.0, show_default=True, help="Fraction of pairs hit by heavy-tailed noise.")
@click.option("--outlier-scale", default=1.0, show_default=True, help="Scale of the heavy-tailed noise.")
@click.option("--asymmetry", default=0.0, show_default=True, help="Fraction of pairs with asymmetric RTT.")
@click.option("--missing", "missing_frac", default=0.0, show_default=True, help="Fraction of pairs left unmeasured.")
@click.option("--tenant-us", default=0.0, show_default=True,
              help="Other tenants' noise per host (us scale; heavy-tailed over hosts and pairs).")
@click.option("--noisy-hosts", default=0.0, show_default=True,
              help="Fraction of hosts with --noisy-factor times more tenant noise (needs --tenant-us).")
@click.option("--noisy-factor", default=10.0, show_default=True, help="How much noisier the noisy hosts are.")
@click.option("--bandwidth/--no-bandwidth", default=False, show_default=True, help="Also generate a bandwidth matrix.")
@click.option("--host-gbps", default=25.0, show_default=True, help="Bandwidth inside a rack (Gbit/s).")
@click.option("--oversubscription", default=4.0, show_default=True, help="Bandwidth divisor per level above the rack.")
@click.option("--no-shuffle", is_flag=True, help="Keep hosts in rack order (default: random order).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Random seed: the same seed and options give the same datacenter.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), callback=stdout_if_dash, help="Probe file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout (needs -o).")
def simulate(output, as_json, no_shuffle, hosts_per_rack, **kw) -> None:
    """Generate a synthetic datacenter probe file with ground truth.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink simulate --racks 4 --rows 4 --outliers 0.05 --missing 0.02 -o noisy.json
      plink simulate --racks 5 --rows 3 --hosts-per-rack 5-9 --tenant-us 1 --noisy-hosts 0.05 \\
          --outliers 0.03 --missing 0.03 -o datacenter.json
    """
    if as_json and output is None:
        raise click.UsageError("--json prints a summary on stdout, so the probe file needs -o FILE (not -)")
    from plink.data.simulate import simulate_datacenter

    probe = simulate_datacenter(shuffle=not no_shuffle, hosts_per_rack=parse_hosts_per_rack(hosts_per_rack), **kw)
    summary = {"hosts": probe.n, "missing_pairs": probe.n_missing_pairs(), "output": output or "-"}
    if output is None:
        click.echo(probe.dumps(), nl=False)
        return
    probe.save(output)
    if as_json:
        _echo_json(summary)
    else:
        click.echo(f"wrote {output}: {probe.n} hosts, {summary['missing_pairs']} missing pairs", err=True)
