"""Anonymization algorithms: the greedy clustering engine shared by the clustering-based models (SPEC §6)."""

from faers_anon.algorithms.greedy_cluster import Partition, QidHierarchies, greedy_cluster, score_candidates

__all__ = ["Partition", "QidHierarchies", "greedy_cluster", "score_candidates"]
