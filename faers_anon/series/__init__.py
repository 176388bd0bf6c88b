"""A series of quarterly releases: the private ledger and composition-safe placement (issue 14).

* :mod:`.ledger` — what each release published about each case pseudonym (never published);
* :mod:`.placement` — returning cases in frozen groups of ≥ k with the same history, or withheld;
* :mod:`.step` — the release pipeline's pre-step (plan, filtered ingested folder) and the
  both-or-neither publication of release and ledger;
* docs/series.md — the argument, what it bounds and what it does not.
"""

from faers_anon.series.ledger import Ledger, open_ledger
from faers_anon.series.placement import SeriesPlan, plan_series

__all__ = ["Ledger", "SeriesPlan", "open_ledger", "plan_series"]
