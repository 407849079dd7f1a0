"""A loop on CI: one job of the GitHub Action at the repository's root (`action.yml`),
or of any runner that starts `ralphstate ci` (docs/how-to/github-action.md).

A job checks out the loop's branch, puts back the contract a person committed to the
base branch or wrote in the workflow (trusted.py), runs `ralphstate run --commit`
within the job's time budget while pushing each commit, and says what happened:
the report in the job's summary, its outputs, and whether the next job was asked for
(job.py, github.py).
"""
