"""The anonymize stage: cases → units → a model's or a method's partition → metrics (SPEC §4–§8)."""
