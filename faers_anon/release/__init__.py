"""The release stage: pipeline, pseudonyms, the written folder, manifest, certificate, report (SPEC §10)."""
