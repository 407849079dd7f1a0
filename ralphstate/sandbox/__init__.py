"""Sandboxed runs (docs/how-to/sandbox.md): what an agent of `ralphstate run` may not
reach, and the sandboxes that keep it there.

- `reach`: the paths at stake, the same for every sandbox: what must stay read-only
  (the per-user store, the guarded files, git's configuration and hooks) and what the
  agent's honest tools need to see.
- `bubblewrap`: any agent on Linux, inside bubblewrap.
- `ccsettings`: Claude Code's own sandbox, through a settings file of the run's.
- `seatbelt`: macOS's `sandbox-exec`, with a profile equivalent to bubblewrap's.
- `modes`: choosing a mode (`auto`, `off`, ...), refusing one that cannot start, and
  what `doctor` says of each.

How the newest run confined its agent, `status` reads from the history alone
(loop/statusfacts.py), so that it imports no sandbox.
"""
