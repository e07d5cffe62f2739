"""environment.yml (conda) must list the same packages as pyproject.toml (pip).

The pip side is the ``[project]`` dependencies plus the ``notebooks`` and
``test`` extras; the conda side its conda-forge packages plus the PyPI-only ones
its ``pip:`` section installs (libcachesim), bufsim's own ``-e .`` left out. Python
itself and pip are left out of the comparison. Names are compared after PEP 503
normalisation, version ranges after sorting their clauses, so adding,
removing or re-pinning a dependency in one file but not the other fails here.

PyYAML is not a declared dependency, so environment.yml is read by the small
reader below, which understands the subset of YAML an environment file uses
and refuses anything else; where PyYAML happens to be installed a test checks
that both readers agree.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("notebooks", "test", "docs")
EXCLUDED = {"python", "pip"}
# PyPI name -> conda-forge name, for packages whose names differ between the
# two; every package bufsim uses today has the same name on both.
CONDA_NAMES: dict[str, str] = {}

_CONDA_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


def normalize(name: str) -> str:
    """PEP 503 normalised package name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_spec(spec: str) -> tuple[str, ...]:
    """Version range as a sorted tuple of clauses without blanks."""
    return tuple(sorted(c.replace(" ", "") for c in spec.split(",") if c.strip()))


# --------------------------------------------------------------------------
# a small reader for the YAML subset of environment files


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _scalar(text: str, lineno: int) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text[:1] in ("[", "{", "&", "*", "!", "|", ">"):
        raise ValueError(f"environment.yml line {lineno}: unsupported YAML {text!r}")
    return text


def _split_key(text: str) -> tuple[str, str] | None:
    """Split ``key: value`` (value may be empty); None for a plain scalar."""
    match = re.match(r"^([A-Za-z0-9_.-]+):(\s+(.*))?$", text)
    if match is None:
        return None
    return match.group(1), (match.group(3) or "")


def read_simple_yaml(text: str):
    """Parse block mappings, block lists and plain or quoted scalars."""
    lines = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ValueError(f"environment.yml line {lineno}: tab in indentation")
        body = _strip_comment(raw).rstrip()
        if body.strip():
            lines.append((len(body) - len(body.lstrip(" ")), body.strip(), lineno))

    def block(i: int, indent: int):
        if lines[i][1].startswith("- ") or lines[i][1] == "-":
            return seq(i, indent)
        return mapping(i, indent)

    def child(i: int, indent: int, key_is_item: bool):
        """Value of a ``key:`` with nothing after it, starting at line i."""
        if i < len(lines):
            ind, text, _ = lines[i]
            if ind > indent or (ind == indent and text.startswith("- ") and not key_is_item):
                return block(i, ind)
        return None, i

    def mapping(i: int, indent: int):
        out: dict[str, object] = {}
        while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
            _, text, lineno = lines[i]
            kv = _split_key(text)
            if kv is None:
                raise ValueError(f"environment.yml line {lineno}: expected 'key: value'")
            key, value = kv
            if key in out:
                raise ValueError(f"environment.yml line {lineno}: duplicate key {key!r}")
            if value:
                out[key], i = _scalar(value, lineno), i + 1
            else:
                out[key], i = child(i + 1, indent, key_is_item=False)
        if i < len(lines) and lines[i][0] > indent:
            raise ValueError(f"environment.yml line {lines[i][2]}: unexpected indentation")
        return out, i

    def seq(i: int, indent: int):
        out: list[object] = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
            _, text, lineno = lines[i]
            item = text[1:].strip()
            kv = _split_key(item)
            if kv is not None and not kv[1]:
                value, i = child(i + 1, indent, key_is_item=True)
                out.append({kv[0]: value})
            elif kv is not None:
                raise ValueError(
                    f"environment.yml line {lineno}: inline mappings in lists are not supported"
                )
            else:
                out.append(_scalar(item, lineno))
                i += 1
        if i < len(lines) and lines[i][0] > indent:
            raise ValueError(f"environment.yml line {lines[i][2]}: unexpected indentation")
        return out, i

    if not lines:
        return {}
    value, end = block(0, lines[0][0])
    if end != len(lines):
        raise ValueError(f"environment.yml line {lines[end][2]}: unexpected dedent")
    return value


# --------------------------------------------------------------------------
# the two sides


def pip_requirements(pyproject: dict) -> dict[str, tuple[str, ...]]:
    project = pyproject["project"]
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    out: dict[str, tuple[str, ...]] = {}
    for line in reqs:
        req = Requirement(line)
        name = normalize(CONDA_NAMES.get(normalize(req.name), req.name))
        assert name not in out, f"{name} listed twice in pyproject.toml"
        out[name] = normalize_spec(str(req.specifier))
    return out


def conda_requirements(env: dict) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    items = []
    for item in env["dependencies"]:
        if isinstance(item, dict):  # the `- pip:` section: PyPI-only packages, and bufsim
            items += [p for p in item.get("pip", []) if not p.startswith("-")]
        else:
            items.append(item)
    for item in items:
        match = _CONDA_SPEC.match(item)
        assert match, f"cannot read conda spec {item!r}"
        name = normalize(match.group(1))
        if name in EXCLUDED:
            continue
        assert name not in out, f"{name} listed twice in environment.yml"
        out[name] = normalize_spec(match.group(2))
    return out


def drift(pip: dict, conda: dict) -> list[str]:
    """Human-readable differences between the two sides (empty when in step)."""
    problems = [f"{n} is in pyproject.toml but not environment.yml" for n in sorted(pip.keys() - conda.keys())]
    problems += [f"{n} is in environment.yml but not pyproject.toml" for n in sorted(conda.keys() - pip.keys())]
    problems += [
        f"{n}: pyproject.toml says {','.join(pip[n]) or 'any'}, "
        f"environment.yml says {','.join(conda[n]) or 'any'}"
        for n in sorted(pip.keys() & conda.keys())
        if pip[n] != conda[n]
    ]
    return problems


@pytest.fixture(scope="module")
def pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


@pytest.fixture(scope="module")
def env_text() -> str:
    return (ROOT / "environment.yml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def env(env_text) -> dict:
    return read_simple_yaml(env_text)


def test_same_package_names(pyproject, env):
    pip, conda = pip_requirements(pyproject), conda_requirements(env)
    assert set(pip) == set(conda), "\n".join(drift(pip, conda))
    assert "numba" in pip and "papermill" in pip and "pytest" in pip


def test_same_version_ranges(pyproject, env):
    pip, conda = pip_requirements(pyproject), conda_requirements(env)
    assert drift(pip, conda) == []


def test_bench_extra_installed_too(pyproject, env):
    """The bench extra's packages (libcachesim) are the test extra's too (the default
    tier cross-checks against libCacheSim), so the environment installs them."""
    bench = {normalize(Requirement(r).name) for r in pyproject["project"]["optional-dependencies"]["bench"]}
    assert bench, "the bench extra is expected to exist"
    assert bench <= set(conda_requirements(env))


def test_channel_python_and_editable_install(pyproject, env):
    assert env["name"] == "bufsim"
    assert env["channels"] == ["conda-forge"]
    deps = env["dependencies"]
    python = [d for d in deps if isinstance(d, str) and _CONDA_SPEC.match(d).group(1) == "python"]
    assert python, "environment.yml must pin python"
    assert normalize_spec(_CONDA_SPEC.match(python[0]).group(2)) == normalize_spec(
        pyproject["project"]["requires-python"]
    )
    assert "pip" in deps
    assert deps[-1]["pip"][-1] == "-e ."


def test_drift_is_detected(pyproject, env):
    pip, conda = pip_requirements(pyproject), conda_requirements(env)
    pip_added = dict(pip, polars=(">=1",))
    assert drift(pip_added, conda) == ["polars is in pyproject.toml but not environment.yml"]
    conda_bumped = dict(conda, numpy=(">=9",))
    assert any(p.startswith("numpy:") for p in drift(pip, conda_bumped))


def test_reader_handles_environment_file_shapes():
    text = """
name: demo   # trailing comment
channels:
- conda-forge
dependencies:
  - "numpy >=1.26,<2.5"
  - 'pip'
  # a comment line
  - pip:
    - -e .
    - some-pkg==1.0  # pinned
"""
    assert read_simple_yaml(text) == {
        "name": "demo",
        "channels": ["conda-forge"],
        "dependencies": ["numpy >=1.26,<2.5", "pip", {"pip": ["-e .", "some-pkg==1.0"]}],
    }


@pytest.mark.parametrize(
    "bad",
    [
        "dependencies: [numpy, scipy]\n",
        "dependencies:\n  - numpy\n    - scipy\n",
        "dependencies:\n  - name: numpy\n",
        "name: a\nname: b\n",
        "dependencies:\n\t- numpy\n",
    ],
)
def test_reader_refuses_what_it_does_not_understand(bad):
    with pytest.raises(ValueError, match="environment.yml line"):
        read_simple_yaml(bad)


def test_reader_agrees_with_pyyaml(env_text, env):
    yaml = pytest.importorskip("yaml")
    assert env == yaml.safe_load(env_text)
