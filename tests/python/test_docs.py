# Every Python example of docs/python.md and of README.md's Python section runs, in
# order, in one namespace per file (later examples use earlier names).
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def python_blocks(path):
    text = open(os.path.join(ROOT, path)).read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("path", ["docs/python.md", "README.md"])
def test_examples_run(path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name files from the repository's root
    blocks = python_blocks(path)
    assert blocks, "no python examples in " + path
    namespace = {}
    needs_torch = []
    for i, block in enumerate(blocks):
        if "import torch" in block and not has_torch():
            needs_torch.append(i + 1)
            continue
        exec(compile(block, "%s example %d" % (path, i + 1), "exec"), namespace)
    if needs_torch:
        pytest.skip("PyTorch is not installed: %s examples %s did not run" % (path, needs_torch))


def has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False
