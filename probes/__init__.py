"""Measurement: round scheduling, SSH transport, probe methods, the remote agent.

``rounds``   the O(N)-round schedule (1-factorisation of K_N);
``agent``    the stdlib-only agent streamed to each host (sent as text);
``session``  the controller's end of an agent (requests/replies, local agents) and the
             :class:`probes.session.Fleet` (heartbeats, one poll loop, parallel deadlines);
``ssh``      paramiko transport: ssh config, host-key policy, concurrency, retries;
``methods``  self-timed udp passes, fping / icmp rounds, TCP / iperf3 bandwidth rounds;
``sampling`` when a pair's p10 is known well enough; confidence; per-host overhead;
``journal``  the append-only journal of measurements (crash safety, ``--resume``);
``probe``    :func:`probes.probe.probe_hosts`: passes, adaptive sampling, failures, resume;
``netns``    :class:`probes.netns.NetnsCluster`, an emulated cluster for tests.
"""
