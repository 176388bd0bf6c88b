"""The commands of ``faers-anon`` beyond the group itself (:mod:`faers_anon.cli`), one module per stage.

:mod:`.options` turns the option table (:data:`faers_anon.release.options.OPTIONS`) into click
options; :mod:`.anonymize` holds ``anonymize`` and ``release``, :mod:`.signals` ``signals`` and
``compare``, :mod:`.check` ``verify`` and ``risk``. Each command parses, calls one function of
:mod:`faers_anon.api` and prints.
"""
