"""The README's example runs as written."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "Plan(" in out


def test_readme_names_the_two_setup_commands():
    """The set-up block holds exactly the main job and the tests, both Makefile targets."""
    text = README.read_text()
    section = text[text.index("## Set up on a fresh machine") :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c] == ["make reproduce", "make test"]
    makefile = (README.parent / "Makefile").read_text()
    assert re.search(r"^reproduce:", makefile, flags=re.M)
    assert re.search(r"^test:", makefile, flags=re.M)
