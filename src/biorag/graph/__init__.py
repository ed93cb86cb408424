"""Graph: entity deduplication, the local claim multigraph, its layers, denoising and exports."""
