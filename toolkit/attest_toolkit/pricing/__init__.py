"""Pricing live calls: `table` (the built-in price table and its date, importing nothing of the package:
`attest --version` prints the date) and `cost` (a call's usage, cost and estimate; the note naming the
table under a run's live calls). This module imports neither, so reading the date loads no more.
"""
