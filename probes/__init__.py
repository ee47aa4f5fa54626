"""Measurement: round scheduling, SSH transport, probe methods, the remote agent.

``rounds``   the O(N)-round schedule (1-factorisation of K_N);
``agent``    the stdlib-only agent streamed to each host (sent as text);
``session``  the controller's end of an agent (requests/replies, local agents);
``ssh``      paramiko transport: ssh config, host-key policy, concurrency, retries;
``methods``  udp / fping / icmp latency and TCP / iperf3 bandwidth for a round;
``probe``    :func:`probes.probe.probe_hosts`, checkpoints and resume;
``netns``    :class:`probes.netns.NetnsCluster`, an emulated cluster for tests.
"""
