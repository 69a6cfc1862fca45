"""report-v2 and what is made of it: build and merge, JUnit, other runners' rows, the policy, the summary,
the HTML page, progress lines.
"""
