"""Publishing a report to GitLab CI: the sticky merge-request note, Code Quality, the job's outputs.

- `context`: what the pipeline is about, from the CI_* variables; the token.
- `client`: every GitLab REST API v4 call (requests): PRIVATE-TOKEN, pagination, 429 waits, one-line errors.
- `notes`: the sticky note, found by its marker and its author (`GET /user`), never another user's.
- `publish`: the `attest ci publish` step on GitLab, which never decides the gate.
- `step`: `GitLabStep`, a `forge` step on GitLab CI: outputs in a dotenv report, plain log lines.
- `codequality`: a report's misses and live calls as GitLab's Code Quality report.
"""
