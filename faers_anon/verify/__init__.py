"""The independent verifier: re-checks a written release from its files alone (SPEC §5, §7, §8, §10, §11)."""
