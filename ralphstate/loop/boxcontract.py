"""The task file as the loop's contract (`init --task FILE --contract boxes`,
docs/how-to/task-lists.md, "The task file as the contract").

The person opts in when the loop starts: each box of the file as it is then becomes a
criterion (`boxCriteria`), named by its text; a box that ends with
`(check: `COMMAND`)` carries its check, as a template's criterion does. From then on:

`taskfile.apply` keeps them so at every reading of the file:

- a box criterion without a check is met while every box with its name is ticked. A
  tick is the agent's word, so it is a claim, as `criteria set` is (evidence
  `claimed`), and is said so wherever verified is told from claimed;
- a box criterion with a check is met by its check; its tick proves nothing;
- a box added later (by the agent or anyone) is a step, not a criterion: the person's
  contract is the boxes the loop started with (`criteria add` adds one);
- a box criterion whose box is gone from the file is unmet, and `criteria set` cannot
  stand in for the box: the next reading of the file sets it back. Removing the
  criterion itself weakens the contract, which a person approves (docs/explanation/proof.md).
"""

from __future__ import annotations

from ralphstate.core.errors import RalphstateError
from ralphstate.loop import taskfile

CONTRACTS = ("boxes",)


def criteria(found: list[taskfile.Box], name: str) -> tuple[list[str], dict[str, str]]:
    """The criteria the boxes `found` in the task file `name` make, and their checks;
    RalphstateError when it has none."""
    names: list[str] = []
    checks: dict[str, str] = {}
    for box in found:
        text, check = taskfile.own_check(box.text)
        if text not in names:
            names.append(text)
        if check is not None:
            if checks.get(text, check) != check:
                raise RalphstateError(f"the task file {name} gives {text!r} two checks; keep one.")
            checks[text] = check
    if not names:
        raise RalphstateError(
            f"--contract boxes makes the boxes of {name} the loop's criteria, and it has"
            " none: add `- [ ]` lines."
        )
    return names, checks
