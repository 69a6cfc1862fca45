"""The gate as no forge in particular runs it: which tests a change runs, the test command under the
sandbox, the policy's verdict and the step's end. A forge (`github/`, `gitlab/`) gives each step its
outputs, summary and messages through `step.Step`; `forges.py` chooses which, and `attest ci` wires
the two."""
