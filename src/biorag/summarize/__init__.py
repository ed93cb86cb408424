"""Summarize: claims of interest and layerwise summarization of the claim graph around them."""
