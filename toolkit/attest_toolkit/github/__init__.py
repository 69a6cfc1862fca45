"""Publishing a report to GitHub: the sticky PR comment, the job summary, annotations and outputs.

- `commands`: workflow commands and environment files (`::error ...::`, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY).
- `event`: what the run is about, from GITHUB_* and the event file; the PR artifact of fork runs.
- `trim`: fitting markdown under GitHub's size limits without breaking its fences.
- `annotations`: the report's misses, failures and live calls as annotations, most important first.
- `publisher`: every GitHub API call (PyGithub), with rate-limit aware retries.
- `publish`: the `attest github publish` steps, degrading on forks and read-only tokens.
"""
