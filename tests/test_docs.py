"""The docs site (mkdocs.yml, docs/): it builds strictly, and its API reference renders every exported name.

`mkdocs build --strict` turns every warning into a failure: a broken link or anchor, a page in the nav that does
not exist or a page that the nav leaves out, a docstring that mkdocstrings cannot read. The reference's pages
(docs/api/*.md) render names through `::: IDENTIFIER` directives; every name of every `__all__` in azjax/ must be
one of them (or a member a directive lists) and have a docstring.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import griffe  # the docs tools come with the dev extra (mkdocstrings[python])
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


def modules_with_all() -> list[str]:
    """Every module of azjax/ whose source assigns `__all__`, by its dotted name."""
    found = []
    for path in sorted((ROOT / "azjax").rglob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
               for node in tree.body):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def exported_names() -> list[str]:
    """`MODULE.NAME` for every NAME in every `__all__` of azjax/, as the modules give them at run time."""
    return [f"{module}.{name}" for module in modules_with_all()
            for name in importlib.import_module(module).__all__]


def directives() -> dict[str, dict]:
    """Every `::: IDENTIFIER` of the API pages with its options (the indented YAML under `options:`)."""
    found = {}
    for page in sorted(API.glob("*.md")):
        lines = page.read_text().splitlines()
        for index, line in enumerate(lines):
            match = re.fullmatch(r":::\s+(\S+)\s*", line)
            if not match:
                continue
            block = []
            for following in lines[index + 1:]:
                if following.strip() and not following.startswith(" "):
                    break
                block.append(following)
            options = (yaml.safe_load("\n".join(block)) or {}).get("options", {}) if block else {}
            found[match[1]] = options or {}
    return found


@pytest.fixture(scope="module")
def package():
    return griffe.load("azjax", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)


def resolve(package, path: str):
    """The griffe object that `path` (azjax.X.Y) names, followed through imports to where it is defined."""
    found = package if path == "azjax" else package[path.removeprefix("azjax.")]
    return found.final_target if found.is_alias else found


def covered(package) -> set[str]:
    """The paths the directives render: each identifier, the members it lists (or a module's `__all__`, where
    it lists none), and where each of those is defined."""
    paths = set()
    for identifier, options in directives().items():
        paths.add(identifier)
        target = resolve(package, identifier)
        members = options.get("members")
        if members is None and target.is_module:
            members = list(getattr(importlib.import_module(identifier), "__all__", []))
        for member in members or []:
            paths.add(f"{identifier}.{member}")
    return paths | {resolve(package, path).path for path in paths}


def test_the_site_builds_strictly(tmp_path):
    """No warning (strict), every nav page present, the notebooks with their stored outputs, the reference built."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert "WARNING" not in output, output[-5000:]
    nav = yaml.safe_load(re.sub(r"!!python\S*", "", (ROOT / "mkdocs.yml").read_text()))["nav"]
    pages = []

    def walk(entries):
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            walk(value) if isinstance(value, list) else pages.append(value)

    walk(nav)
    for page in pages:
        built = tmp_path / re.sub(r"(index)?\.(md|ipynb)$", "", page) / "index.html"
        assert built.is_file(), page
    quickstart = (tmp_path / "notebooks" / "quickstart" / "index.html").read_text()
    assert "data:image/png;base64" in quickstart  # its stored plots, not re-executed
    core = (tmp_path / "api" / "core" / "index.html").read_text()
    assert 'id="azjax.core.run_search"' in core
    # Every setting of a run, with the help `azjax train --help` gives it (mkdocs_hooks.py writes the table).
    import html

    from azjax import config

    settings = html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "api" / "config-fields" / "index.html").read_text()))
    fields = config.field_paths()
    assert len(fields) > 50 and "azjax:config-fields" not in settings
    for path, (_, _, help_text) in fields.items():
        assert f"--{path}" in settings and help_text.replace("`", "") in settings, path  # code spans unmarked


def test_every_exported_name_is_in_the_api_reference_with_a_docstring(package):
    names = exported_names()
    assert "azjax.core.run_search" in names and "azjax.load_agent" in names and len(names) > 150
    assert {"azjax", "azjax.core", "azjax.games", "azjax.serve"} <= set(modules_with_all())
    rendered = covered(package)
    missing = [name for name in names if name not in rendered and resolve(package, name).path not in rendered]
    assert not missing, f"exported but in no `:::` directive of docs/api/: {missing}"
    undocumented = [name for name in names
                    if not (resolve(package, name).docstring and resolve(package, name).docstring.value.strip())]
    assert not undocumented, f"exported without a docstring: {undocumented}"


# Its fields are described by `azjax train --help` (from their comments); the reference's table of them is to come.
FIELDS_DESCRIBED_ELSEWHERE = ("azjax.config.Config",)


def fields_without_description(package) -> tuple[int, dict[str, list[str]]]:
    """Over every exported dataclass and PyTreeNode type but FIELDS_DESCRIBED_ELSEWHERE: how many fields they have,
    and for each type the fields the reference shows no description of (neither a docstring under the field, its
    own or a base class's, nor an entry of the class docstring's Attributes section). A Flax module's own `parent`
    and `name` are not counted."""
    import dataclasses

    checked, missing, seen = 0, {}, set()
    for name in exported_names():
        module, _, attribute = name.rpartition(".")
        cls = getattr(importlib.import_module(module), attribute)
        target = resolve(package, name)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or target.path in seen:
            continue
        seen.add(target.path)
        if target.path in FIELDS_DESCRIBED_ELSEWHERE:
            continue
        listed = {entry.name for section in (target.docstring.parse("google") if target.docstring else [])
                  if section.kind.value == "attributes" for entry in section.value}
        flax_own = {"parent", "name"} if any(base.__name__ == "Module" for base in cls.__mro__[1:]) else set()
        for field in dataclasses.fields(cls):
            if field.name in flax_own:
                continue
            checked += 1
            member = target.all_members.get(field.name)
            if field.name not in listed and not (member is not None and member.docstring
                                                 and member.docstring.value.strip()):
                missing.setdefault(target.path, []).append(field.name)
    return checked, missing


def test_every_field_of_an_exported_type_is_described(package):
    """What each field of `SearchOutput`, `Trajectory`, a game's state, ... holds (its shape, dtype, whose side),
    on the site: written where mkdocstrings reads it, not in a comment only the source shows."""
    checked, missing = fields_without_description(package)
    assert checked > 150
    assert not missing, f"fields the reference does not describe: {missing}"


def test_a_name_left_out_of_the_reference_is_found(package):
    """The coverage check itself: a module directive listing members covers those, not the module's others."""
    rendered = covered(package)
    assert "azjax.core.run_search" in rendered and "azjax.search.run_search" in rendered
    assert "azjax.search.make_search_fn" not in rendered  # public in its module, exported by no __all__
