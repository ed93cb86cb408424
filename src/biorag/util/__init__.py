"""Small helpers shared by every stage: atomic files, logging, progress."""
