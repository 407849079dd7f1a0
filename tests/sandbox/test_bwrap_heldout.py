"""`ralphstate run --sandbox bwrap` hides the held-out checks (storage/peruser/heldoutstore.py)
from the agent: the rest of ralphstate's per-user store it reads, read-only; the held-out
checks' directory it finds empty (tests/adversarial/test_heldout.py has the rest)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import CRITERION, Person
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

SECRET = "HIDDEN-EDGE-4412"
# The agent looks through the store for the held-out checks, and says what it found.
LOOKING = r"""
import json, sys
from pathlib import Path

sys.stdin.read()
found = {"files": [], "secret": False, "trust": False}
for path in Path(sys.argv[1]).rglob("*"):
    if path.is_file():
        found["files"].append(path.name)
        found["secret"] |= sys.argv[2] in path.read_text(errors="replace")
found["trust"] = Path(sys.argv[3]).is_file()
Path("found.json").write_text(json.dumps(found))
print("looked", flush=True)
"""


def test_a_sandboxed_agent_finds_no_held_out_check(
    calc: Path, person: Person, isolated: Path, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    hidden = kept / "test_edge.py"
    hidden.write_text(f'"""{SECRET}"""\n')
    person.rs("heldout", "add", CRITERION, "--command", f"grep -q {SECRET} test_edge.py",
              "--file", str(hidden))  # fmt: skip
    store = isolated / "data"
    assert any(SECRET in p.read_text() for p in (store / "heldout").rglob("*") if p.is_file())
    script = tmp_path / "looking.py"
    script.write_text(LOOKING)
    agent = join_command(
        [sys.executable, str(script), str(store / "heldout"), SECRET, str(store / "trust.json")]
    )

    person.rs("run", "--sandbox", "bwrap", "--agent", agent, "--max", "1", ok=False)

    found = json.loads((calc / "found.json").read_text())
    assert found == {"files": [], "secret": False, "trust": True}, found
