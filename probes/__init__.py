"""Measurement: round scheduling, SSH transport, probe methods, the remote agent."""
