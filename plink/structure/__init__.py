"""The network's structure: denoised coordinates (ProbeEmbed), groups, and the metrics that score them."""
