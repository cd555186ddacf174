"""perflab: a reproducible research workbench for systems performance studies.

Data flows one way through the stages, one module each:
spec -> design -> runner (remote, lab, ledger) -> store (raw) -> tools (parsers)
-> tidy -> stats -> report -> paper.
"""

__version__ = "0.1.0"
