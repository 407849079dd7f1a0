"""`ralphstate install --sandbox` writes Claude Code's sandbox into the project's local
settings with ralphstate's write denials, keeps what the person set, and
`--uninstall` takes out exactly what it added."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.adversarial.scripted import Person

OWN = {
    "permissions": {"deny": ["Bash(rm -rf:*)"], "allow": ["Bash(ls:*)"]},
    "sandbox": {"filesystem": {"denyWrite": ["/srv/mine"]}},
    "model": "opus",
}


def local(calc: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((calc / ".claude" / "settings.local.json").read_text())
    return data


def test_install_adds_the_denials_and_uninstall_removes_exactly_them(
    calc: Path, person: Person, isolated: Path
) -> None:
    settings = calc / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(OWN))
    said = person.rs("install", "--sandbox").stdout
    assert "set sandbox.enabled = true" in said, said
    data = local(calc)
    box = data["sandbox"]
    assert isinstance(box, dict)
    assert (box["enabled"], box["failIfUnavailable"], box["allowUnsandboxedCommands"]) == (
        True,
        True,
        False,
    )
    denied = box["filesystem"]["denyWrite"]
    test_file = os.path.realpath(calc / "tests" / "test_calc.py")
    for path in (test_file, str(isolated), os.path.realpath(calc / ".git" / "config")):
        assert path in denied, denied
    assert denied[0] == "/srv/mine"
    rules = data["permissions"]["deny"]  # type: ignore[index]
    assert rules[0] == "Bash(rm -rf:*)" and f"Edit(/{test_file})" in rules
    assert data["model"] == "opus"
    assert person.rs("install", "--sandbox").stdout.startswith("unchanged"), "idempotent"

    person.rs("install", "--sandbox", "--uninstall")
    assert local(calc) == OWN


def test_uninstall_keeps_what_the_person_changed_since(calc: Path, person: Person) -> None:
    person.rs("install", "--sandbox")
    data = local(calc)
    data["sandbox"]["enabled"] = False  # type: ignore[index]
    data["sandbox"]["filesystem"]["denyWrite"].append("/srv/theirs")  # type: ignore[index]
    (calc / ".claude" / "settings.local.json").write_text(json.dumps(data))
    person.rs("uninstall", "--sandbox")
    assert local(calc) == {
        "sandbox": {"enabled": False, "filesystem": {"denyWrite": ["/srv/theirs"]}}
    }
