"""Signal analysis of ingested folders and releases, one quarter or cumulative (SPEC §9)."""
